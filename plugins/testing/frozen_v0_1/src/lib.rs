//! A plugin built against the frozen `toolhost:plugin@0.1.0`, without the
//! SDK: the host must keep loading it, whatever the current contract is.

wit_bindgen::generate!({
    path: "../../../wit/released/0.1.0",
    world: "plugin",
});

use toolhost::plugin::host::{LogLevel, log};
use toolhost::plugin::types::{Capabilities, Permission, Tool};

struct Frozen;

impl Guest for Frozen {
    fn manifest() -> Manifest {
        Manifest {
            name: "frozen".into(),
            version: "0.1.0".into(),
            description: "Built against toolhost:plugin@0.1.0".into(),
            api_version: "0.1.0".into(),
            tools: vec![Tool {
                name: "echo_v0_1".into(),
                description: "Return the arguments as given.".into(),
                params: Vec::new(),
                permission: Permission::Public,
                result_approval: false,
                agent_callable: true,
                distributed_exposed: false,
                tags: Vec::new(),
                example: None,
            }],
            capabilities: Capabilities { directories: Vec::new(), env: Vec::new(), http_hosts: Vec::new() },
        }
    }

    fn invoke(tool: String, args_json: String) -> Result<Output, ToolError> {
        log(LogLevel::Info, "echo called");
        match tool.as_str() {
            "echo_v0_1" => Ok(Output::Text(format!("0.1.0 echoes {args_json}"))),
            other => Err(ToolError::UnknownTool(other.into())),
        }
    }
}

export!(Frozen);
