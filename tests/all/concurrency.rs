//! Many calls at once: each returns its own correct result.

use crate::built::{CALC, HOSTILE};
use crate::support::TestHost;
use serde_json::json;
use std::sync::Arc;
use toolhost::Status;

#[tokio::test(flavor = "multi_thread", worker_threads = 8)]
async fn two_hundred_concurrent_calls_across_eight_tasks() {
    let host = Arc::new(TestHost::new(&[CALC, HOSTILE], "").await);
    let tasks: Vec<_> = (0..8u64)
        .map(|task| {
            let host = host.clone();
            tokio::spawn(async move {
                let calls = (0..25u64).map(|i| {
                    let host = host.clone();
                    async move {
                        let expression = format!("{task} * 1000 + {i}");
                        let outcome = host.call("calculate", json!({ "expression": expression })).await;
                        (task * 1000 + i, outcome)
                    }
                });
                let mut handles = Vec::new();
                for call in calls {
                    handles.push(tokio::spawn(call));
                }
                let mut results = Vec::new();
                for handle in handles {
                    results.push(handle.await.unwrap());
                }
                results
            })
        })
        .collect();
    let mut seen = 0;
    for task in tasks {
        for (expected, outcome) in task.await.unwrap() {
            assert_eq!(outcome.status, Status::Success, "{}", outcome.output);
            let value: serde_json::Value = serde_json::from_str(&outcome.output).unwrap();
            assert_eq!(value["value"].as_f64().unwrap(), expected as f64, "{}", outcome.output);
            seen += 1;
        }
    }
    assert_eq!(seen, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn hostile_calls_beside_good_ones_do_not_disturb_them() {
    let host = Arc::new(TestHost::new(&[CALC, HOSTILE], "[plugins.hostile]\nlimits = { fuel = 20_000_000 }\n").await);
    let calls = (0..40u64).map(|i| {
        let host = host.clone();
        tokio::spawn(async move {
            if i % 2 == 0 {
                (i, host.call("spin", json!({})).await)
            } else {
                (i, host.call("calculate", json!({ "expression": format!("{i} + 1") })).await)
            }
        })
    });
    for call in calls.collect::<Vec<_>>() {
        let (i, outcome) = call.await.unwrap();
        if i % 2 == 0 {
            assert_eq!(outcome.status, Status::OutOfFuel);
        } else {
            assert_eq!(outcome.status, Status::Success);
            assert!(outcome.output.contains(&format!("\"value\":{}.0", i + 1)), "{}", outcome.output);
        }
    }
}
