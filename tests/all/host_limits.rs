//! What a plugin can make the host hold or do for it — host memory through
//! WASI resources, resources, log records, host copies, open files, special
//! files, symlinks, error text — is bounded per call, named in the outcome,
//! and the host serves the next call. Also: what ends a call is named
//! after what really ended it.

use crate::built::{CALC, HOARDER, MANIFEST_HOG};
use crate::support::{TestHost, capture_logs, fds_left_under, serve_forever};
use serde_json::json;
use std::time::Duration;
use toolhost::Status;

/// A host with `hoarder` and `calc`; `/data` is a fresh directory when
/// `data` is true; `extra` is appended to `[plugins.hoarder]`.
async fn hoarder(data: bool, extra: &str) -> (TestHost, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("data")).unwrap();
    std::fs::write(dir.path().join("data/inside.txt"), "inside").unwrap();
    std::fs::write(dir.path().join("outside.txt"), "secret").unwrap();
    let dirs = if data {
        format!(
            "dirs = {{ \"/data\" = {{ host = {:?}, access = \"read-write\" }} }}\n",
            dir.path().join("data").display().to_string()
        )
    } else {
        String::new()
    };
    let host = TestHost::new(&[HOARDER, CALC], &format!("[plugins.hoarder]\nfile = \"hoarder.wasm\"\n{dirs}{extra}")).await;
    (host, dir)
}

async fn next_call_works(host: &TestHost) {
    let outcome = host.call("calculate", json!({ "expression": "6 * 7" })).await;
    assert_eq!(outcome.status, Status::Success, "{}", outcome.output);
    assert!(outcome.output.contains("42"), "{}", outcome.output);
}

#[tokio::test]
async fn wasi_http_without_a_grant_refuses_before_the_host_holds_anything() {
    let (host, _dir) = hoarder(false, "").await;
    let outcome = host.call("hoard_fields", json!({})).await;
    assert_eq!(outcome.status, Status::Denied, "{}", outcome.output);
    assert_eq!(
        outcome.output,
        "plugin `hoarder` called `wasi:http/types@0.2.12#[constructor]fields`, but no HTTP host is granted to it; \
         allow hosts with `http_hosts` in its [plugins.hoarder] section"
    );
    assert!(outcome.duration < Duration::from_secs(1), "{:?}", outcome.duration);
    next_call_works(&host).await;
}

#[tokio::test]
async fn http_fields_held_with_a_grant_hit_the_host_memory_limit() {
    let (host, _dir) = hoarder(false, "http_hosts = [\"127.0.0.1:*\"]\nlimits = { host_memory_mib = 8 }\n").await;
    let outcome = host.call("hoard_fields", json!({})).await;
    assert_eq!(outcome.status, Status::LimitExceeded, "{}", outcome.output);
    assert_eq!(outcome.output, "host memory limit 8 MiB exceeded");
    next_call_works(&host).await;
}

#[tokio::test]
async fn long_request_paths_held_with_a_grant_hit_the_default_host_memory_limit() {
    // Room for many resources, so that host memory is what runs out.
    let (host, _dir) = hoarder(false, "http_hosts = [\"127.0.0.1:*\"]\nlimits = { resources = 100_000 }\n").await;
    let outcome = host.call("hoard_paths", json!({})).await;
    assert_eq!(outcome.status, Status::LimitExceeded, "{}", outcome.output);
    assert_eq!(outcome.output, "host memory limit 32 MiB exceeded");
    next_call_works(&host).await;
}

#[tokio::test]
async fn resources_held_without_any_grant_hit_the_resources_limit() {
    let (host, _dir) = hoarder(false, "").await;
    let outcome = host.call("hoard_pollables", json!({})).await;
    assert_eq!(outcome.status, Status::LimitExceeded, "{}", outcome.output);
    assert_eq!(outcome.output, "resources limit 1000 exceeded");
    next_call_works(&host).await;
}

#[tokio::test]
async fn empty_log_records_cost_fuel_and_are_capped() {
    let (host, _dir) = hoarder(false, "").await;
    let (_guard, logs) = capture_logs();
    let outcome = host.call("log_empty", json!({})).await;
    assert_eq!(outcome.status, Status::OutOfFuel, "{}", outcome.output);
    assert!(outcome.duration < Duration::from_secs(10), "{:?}", outcome.duration);
    let records = logs.lock().unwrap().iter().filter(|(plugin, _)| plugin == "hoarder").count();
    assert!(records <= toolhost::limits::LOG_RECORDS_PER_CALL + 1, "{records} records written");
    assert!(records > 100, "records up to the cap are written: {records}");
    next_call_works(&host).await;
}

#[tokio::test]
async fn copying_huge_log_messages_costs_fuel_so_the_call_ends_long_before_its_deadline() {
    let (host, _dir) = hoarder(false, "").await;
    let outcome = host.call("log_huge", json!({ "mib": 8 })).await;
    assert_eq!(outcome.status, Status::OutOfFuel, "{}", outcome.output);
    assert_eq!(outcome.fuel_used, toolhost::limits::DEFAULT_FUEL);
    assert!(outcome.duration < Duration::from_secs(10), "took {:?}", outcome.duration);
    next_call_works(&host).await;
}

#[tokio::test]
async fn one_host_call_cannot_take_more_than_its_share_of_host_memory_at_once() {
    let (host, _dir) = hoarder(false, "").await;
    let outcome = host.call("log_huge", json!({ "mib": 20 })).await;
    assert_eq!(outcome.status, Status::LimitExceeded, "{}", outcome.output);
    assert_eq!(outcome.output, "a host call was handed more than 16 MiB at once, the limit for one call");
    next_call_works(&host).await;
}

#[tokio::test]
async fn a_poll_list_longer_than_the_resources_limit_is_refused_before_it_is_indexed() {
    let (host, _dir) = hoarder(false, "").await;
    let within = host.call("poll_many", json!({ "count": 10 })).await;
    assert_eq!(within.status, Status::Success, "{}", within.output);
    let over = host.call("poll_many", json!({ "count": 5_000 })).await;
    assert_eq!(over.status, Status::LimitExceeded, "{}", over.output);
    assert_eq!(over.output, "poll list limit 1000 exceeded");
    next_call_works(&host).await;
}

#[tokio::test]
async fn a_log_record_cannot_forge_host_log_lines() {
    let (host, _dir) = hoarder(false, "").await;
    let (_guard, logs) = capture_logs();
    let outcome = host.call("log_forged", json!({})).await;
    assert_eq!(outcome.status, Status::Success, "{}", outcome.output);
    let logs = logs.lock().unwrap();
    let (_, message) = logs.iter().find(|(plugin, _)| plugin == "hoarder").expect("the record was logged");
    assert!(!message.contains(['\n', '\r', '\x1b']), "{message:?}");
    assert!(message.contains("ok\\n2026-01-01T00:00:00Z") && message.ends_with("verified\\r\\e[2K"), "{message}");
}

#[tokio::test]
async fn an_error_message_is_held_to_the_output_limit() {
    let (host, _dir) = hoarder(false, "").await;
    for (kind, status) in [("failed", Status::Error), ("invalid-args", Status::InvalidArgs)] {
        let outcome = host.call("huge_error", json!({ "mib": 10, "kind": kind })).await;
        assert_eq!(outcome.status, status, "{kind}");
        assert!(outcome.output.len() < (1 << 20) + 200, "{kind}: {} bytes", outcome.output.len());
        assert!(
            outcome.output.ends_with(" … [the plugin's error message of 10 MiB was cut at the output limit of 1 MiB]"),
            "{kind}: {}",
            &outcome.output[outcome.output.len() - 120..]
        );
    }
    next_call_works(&host).await;
}

#[tokio::test]
async fn an_error_message_built_to_be_slow_to_explain_is_explained_in_one_pass() {
    let (host, _dir) = hoarder(false, "").await;
    // Explaining errnos runs after the call, outside fuel and the timeout;
    // scanning this message once per errno took minutes of a host thread.
    let explained = tokio::time::timeout(std::time::Duration::from_secs(20), host.call("errno_bomb", json!({}))).await;
    let outcome = explained.expect("the outcome came within 20 s");
    assert_eq!(outcome.status, Status::Error, "{}", &outcome.output[..200]);
    assert!(outcome.output.starts_with("(WASI errno 1, E2BIG)(WASI errno 1, E2BIG)"), "{}", &outcome.output[..200]);
    next_call_works(&host).await;
}

#[tokio::test]
async fn random_bytes_are_capped_per_request() {
    let (host, _dir) = hoarder(false, "").await;
    let within = host.call("random", json!({ "bytes": 1024 })).await;
    assert_eq!(within.status, Status::Success, "{}", within.output);
    let over = host.call("random", json!({ "bytes": 2 << 20 })).await;
    assert_eq!(over.status, Status::LimitExceeded, "{}", over.output);
    assert_eq!(over.output, "random bytes per request limit 1048576 exceeded");
    next_call_works(&host).await;
}

/// The host names what ended a call from its own records (the limiter's
/// refusal, the trap code), not from what the plugin printed: a plugin
/// whose growth was refused and which then aborts (here with a panic, whose
/// "panicked at" the host once took as proof of a bug) hit the memory
/// limit; one that goes on to loop runs out of fuel.
#[tokio::test]
async fn what_a_plugin_prints_does_not_change_what_ended_its_call() {
    let (host, _dir) = hoarder(false, "").await;
    let aborted = host.call("grow_then_panic", json!({})).await;
    assert_eq!(aborted.status, Status::LimitExceeded, "{}", aborted.output);
    assert_eq!(aborted.output, "memory limit 64 MiB exceeded");
    let spun = host.call("grow_then_spin", json!({})).await;
    assert_eq!(spun.status, Status::OutOfFuel, "{}", spun.output);
    assert_eq!(spun.output, "out of fuel after 1 000 000 000 units");
    next_call_works(&host).await;
}

#[tokio::test]
async fn an_exit_is_reported_as_an_exit() {
    let (host, _dir) = hoarder(false, "").await;
    let outcome = host.call("exit", json!({})).await;
    assert_eq!(outcome.status, Status::Error);
    assert_eq!(outcome.output, "the plugin exited with status 0 instead of returning a result");
    next_call_works(&host).await;
}

#[tokio::test]
async fn open_files_are_capped_per_call_and_all_closed_after_it() {
    let (host, dir) = hoarder(true, "limits = { open_files = 8 }\n").await;
    let within = host.call("hold_files", json!({ "count": 8 })).await;
    assert_eq!(within.status, Status::Success, "{}", within.output);
    assert_eq!(within.output, r#"{"held":8}"#);
    let over = host.call("hold_files", json!({})).await;
    assert_eq!(over.status, Status::LimitExceeded, "{}", over.output);
    assert_eq!(over.output, "open files limit 8 exceeded");
    assert_eq!(fds_left_under(dir.path()).await, 0, "every descriptor the calls opened is closed");
    next_call_works(&host).await;
}

#[tokio::test]
async fn the_default_open_files_limit_is_far_below_the_process_limit() {
    let (host, dir) = hoarder(true, "").await;
    let outcome = host.call("hold_files", json!({})).await;
    assert_eq!(outcome.status, Status::LimitExceeded, "{}", outcome.output);
    assert_eq!(outcome.output, format!("open files limit {} exceeded", toolhost::limits::DEFAULT_OPEN_FILES));
    assert_eq!(fds_left_under(dir.path()).await, 0);
}

#[tokio::test]
async fn streams_keep_files_open_and_count_toward_the_open_files_limit() {
    let (host, dir) = hoarder(true, "limits = { open_files = 8 }\n").await;
    let within = host.call("hold_streams", json!({ "count": 7 })).await;
    assert_eq!(within.output, r#"{"held":7}"#);
    let over = host.call("hold_streams", json!({})).await;
    assert_eq!(over.status, Status::LimitExceeded, "{}", over.output);
    assert_eq!(over.output, "open files limit 8 exceeded");
    assert_eq!(fds_left_under(dir.path()).await, 0);
    next_call_works(&host).await;
}

#[tokio::test]
async fn directory_listings_count_against_the_host_memory_limit() {
    let (host, _dir) = hoarder(true, "limits = { host_memory_mib = 1 }\n").await;
    let outcome = host.call("hoard_listings", json!({ "files": 2_000 })).await;
    assert_eq!(outcome.status, Status::LimitExceeded, "{}", outcome.output);
    assert_eq!(outcome.output, "host memory limit 1 MiB exceeded");
    next_call_works(&host).await;
}

#[tokio::test]
async fn outbound_http_requests_are_capped_per_call() {
    let port = serve_forever("ok").await;
    let (host, _dir) = hoarder(false, "http_hosts = [\"127.0.0.1:*\"]\nlimits = { http_requests = 3 }\n").await;
    let url = format!("http://127.0.0.1:{port}/");
    let within = host.call("fetch_many", json!({ "url": url, "count": 3 })).await;
    assert_eq!(within.status, Status::Success, "{}", within.output);
    let over = host.call("fetch_many", json!({ "url": url, "count": 10 })).await;
    assert_eq!(over.status, Status::LimitExceeded, "{}", over.output);
    assert!(
        over.output.starts_with("HTTP requests limit 3 exceeded; the plugin then failed: request 3 failed: "),
        "the limit, with the plugin's own words: {}",
        over.output
    );
    next_call_works(&host).await;
}

#[tokio::test]
async fn a_fifo_in_a_granted_directory_is_refused_without_blocking() {
    let (host, dir) = hoarder(true, "limits = { timeout_ms = 2_000 }\n").await;
    let made = std::process::Command::new("mkfifo").arg(dir.path().join("data/pipe")).status().unwrap();
    assert!(made.success());
    let outcome = host.call("read_data", json!({ "name": "pipe" })).await;
    assert_eq!(outcome.status, Status::Error, "{}", outcome.output);
    assert!(outcome.output.starts_with("cannot read /data/pipe: "), "{}", outcome.output);
    assert!(outcome.duration < Duration::from_secs(1), "refused at once, not at the deadline: {:?}", outcome.duration);
    let regular = host.call("read_data", json!({ "name": "inside.txt" })).await;
    assert_eq!(regular.output, "inside");
    // Setting times follows the path to the FIFO: refused, not blocked.
    let touched = host.call("touch", json!({ "name": "pipe" })).await;
    assert_eq!(touched.status, Status::Error, "{}", touched.output);
    assert!(touched.duration < Duration::from_secs(1), "{:?}", touched.duration);
    let regular = host.call("touch", json!({ "name": "inside.txt" })).await;
    assert_eq!(regular.status, Status::Success, "{}", regular.output);
}

#[tokio::test]
async fn symlinks_out_of_a_read_write_grant_are_refused() {
    let (host, dir) = hoarder(true, "").await;
    for target in ["../outside.txt", "/etc/passwd", "a/../../outside.txt"] {
        let outcome = host.call("symlink", json!({ "target": target, "name": "escape" })).await;
        assert_eq!(outcome.status, Status::Error, "{target}: {}", outcome.output);
        assert!(outcome.output.contains("refused"), "{}", outcome.output);
        assert!(std::fs::symlink_metadata(dir.path().join("data/escape")).is_err(), "{target}: the link was created");
    }
    let inside = host.call("symlink", json!({ "target": "inside.txt", "name": "alias" })).await;
    assert_eq!(inside.status, Status::Success, "{}", inside.output);
    assert_eq!(std::fs::read_link(dir.path().join("data/alias")).unwrap(), std::path::Path::new("inside.txt"));
}

#[tokio::test]
async fn a_manifest_that_floods_the_log_and_reaches_for_http_is_refused_and_bounded() {
    let (_guard, logs) = capture_logs();
    let host = TestHost::new(&[MANIFEST_HOG, CALC], "").await;
    let catalog = host.registry.catalog();
    let refused: Vec<String> = catalog.refused.iter().map(|r| r.error.to_string()).collect();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(
        refused[0]
            == "reading the manifest of manifest_hog.wasm failed: plugin `manifest_hog.wasm` called \
                `wasi:http/types@0.2.12#[constructor]fields`, but a manifest is read with no grants at all",
        "{}",
        refused[0]
    );
    let records: Vec<String> =
        logs.lock().unwrap().iter().filter(|(p, _)| p == "manifest_hog.wasm").map(|(_, m)| m.clone()).collect();
    assert!(records.len() <= toolhost::limits::LOG_RECORDS_PER_CALL + 1, "{} records", records.len());
    assert!(records.iter().all(|m| !m.contains('\n')), "{records:?}");
    next_call_works(&host).await;
}
