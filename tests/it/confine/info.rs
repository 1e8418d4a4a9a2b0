//! `info` says what the last confined start applied, and the probe agrees.

use super::*;
use serde_json::{json, Value};

/// Each rule `info` lists as enforced, and what the `power` probe must then find denied.
const RULES_PROBED: &[(&str, &[&str])] = &[
    ("capabilities: none held", &["capabilities", "bounding set"]),
    ("kernel keyrings:", &["find the user keyring", "add a key"]),
    (
        "system calls: an allow-list",
        &[
            "read the kernel log",
            "make a bpf map",
            "set the host's limits",
            "set the host's priority",
            "set the host's CPUs",
            "set the host's I/O priority",
            "make a user namespace",
            "make System V shared memory",
        ],
    ),
    (
        "devices: none made",
        &["make a character device", "make a block device"],
    ),
    (
        "files: read only the program folders",
        &["read /etc beyond the list"],
    ),
];

/// `info` says what the last confined start applied, not what it would: before any start
/// it says so; after one, each rule it lists as enforced is one the hostile probe finds
/// holding. `hello_ack` names the project dir only where it may be read.
#[test]
fn info_says_what_the_last_confined_start_applied_and_the_probe_agrees() {
    landlock_abi();
    let world = World::new("confine-info", "hostile-py");
    assert_ok(&world.zot(&["install", world.ext.to_str().unwrap(), "--confine", "--yes"]));
    let info = |world: &World| -> Value {
        let out = world.zot(&["info", "hostile", "--json"]);
        assert_ok(&out);
        serde_json::from_slice::<Value>(&out.stdout).unwrap()["confinement"].clone()
    };
    let before = info(&world);
    assert_eq!(before["applied_at"], Value::Null, "{before}");
    let text = stdout(&world.zot(&["info", "hostile"]));
    assert!(
        text.contains("not started confined yet: what this kernel would apply"),
        "{text}"
    );

    let call = |tool: &str, args: Value| {
        answer(
            &world
                .zot(&["call", "hostile", tool, &args.to_string(), "--json"])
                .clone(),
        )
    };
    let found = call("power", json!({ "etc": etc_left_out() }));
    let after = info(&world);
    assert!(after["applied_at"].is_string(), "{after}");
    let text = stdout(&world.zot(&["info", "hostile"]));
    assert!(text.contains("its last start, "), "{text}");
    let rules = after["rules"].as_array().unwrap();
    for (rule, attacks) in RULES_PROBED {
        let listed = rules
            .iter()
            .find(|r| r["rule"].as_str().unwrap().starts_with(rule))
            .unwrap_or_else(|| panic!("no rule {rule:?} in {after}"));
        if listed["enforced"] == true {
            for attack in *attacks {
                assert!(
                    found[*attack].as_str().unwrap().starts_with("denied"),
                    "{rule:?} is said to be enforced, and {attack:?}: {}",
                    found[*attack]
                );
            }
        }
    }

    // Not granted the project: told "/" for it; granted, its path.
    assert_eq!(call("told", json!({}))["cwd"], "/");
    let project = std::fs::canonicalize(&world.cwd).unwrap();
    let mut m: Value = serde_json::from_slice(
        &std::fs::read(world.home.join("extensions/hostile/extension.json")).unwrap(),
    )
    .unwrap();
    assert!(
        m.get("permissions").is_none_or(|p| p.get("cwd").is_none()),
        "{m}"
    );
    m["permissions"] = json!({"cwd": "read"});
    std::fs::write(
        world.home.join("extensions/hostile/extension.json"),
        m.to_string(),
    )
    .unwrap();
    assert_ok(&world.zot(&["confine", "hostile"]));
    assert_ok(&world.zot(&["grant", "hostile", "--all"]));
    assert_eq!(
        call("told", json!({}))["cwd"],
        project.display().to_string()
    );
}
