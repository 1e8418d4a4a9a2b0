//! The Landlock half: the kernel's ABI, what it can enforce, and the ruleset.

use super::{ConfineError, Network, Policy, Rule};
use landlock::{
    path_beneath_rules, Access, AccessFs, AccessNet, CompatLevel, Compatible, NetPort, PathBeneath,
    Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr, RulesetError, RulesetStatus, Scope,
    ABI,
};

/// The Landlock ABI whose rights are asked: files (with `refer`, `truncate`, device
/// `ioctl`), TCP ports (4), abstract UNIX sockets and signals (6), UNIX socket files (9).
/// A kernel with less enforces what it has (best effort), and the report says what not.
const TARGET: ABI = ABI::V9;

/// The Landlock ABI of this kernel: 0 when it has none (not built in, or disabled).
pub(super) fn kernel_abi() -> i64 {
    // SAFETY: landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) only
    // returns the ABI version.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            1u32,
        )
    };
    version.max(0)
}

/// What `restrict_self` answers on a kernel of Landlock ABI `abi` for the ruleset of
/// [`ruleset`] (which asks for [`TARGET`]'s rights).
pub(super) fn expected_status(abi: i64) -> RulesetStatus {
    match abi {
        ..=0 => RulesetStatus::NotEnforced,
        9.. => RulesetStatus::FullyEnforced,
        _ => RulesetStatus::PartiallyEnforced,
    }
}

/// Each rule, and whether a kernel of Landlock ABI `abi` enforces it.
pub(super) fn report(abi: i64, network: &Network) -> Vec<Rule> {
    let needs = |what: &'static str, min: i64| Rule {
        what,
        not_enforced: (abi < min).then(|| {
            if abi == 0 {
                "this kernel has no Landlock".to_string()
            } else {
                format!("needs Landlock ABI {min}, this kernel has {abi}")
            }
        }),
        watched: false,
    };
    let mut rules = vec![
        needs(
            "files: read only the program folders, what programs need of /etc and its own \
             folder; write only its data dir (its temp dir is inside)",
            1,
        ),
        needs("files: no link or rename out of its folders", 2),
        needs("files: no truncation outside its folders", 3),
    ];
    rules.push(match network {
        Network::Off => Rule {
            what: "network: no IP sockets (seccomp)",
            not_enforced: None,
            watched: false,
        },
        Network::TcpPorts(_) => needs("network: TCP connections to the granted ports only", 4),
        Network::Fetch(_) => needs(
            "network: TCP connections to the fetch's ports only, and UDP for name lookups \
             (any address: no kernel interface filters UDP)",
            4,
        ),
    });
    rules.extend([
        needs("devices: no ioctl", 5),
        needs(
            "no connection to abstract UNIX sockets outside, no signal to other processes",
            6,
        ),
        needs(
            "no connection to UNIX socket files outside its data and temp dirs",
            9,
        ),
    ]);
    rules
}

/// What a confined extension may do in its data dir: everything but make a character or
/// block device (which root could otherwise make there, and then read the disk through).
fn writable() -> landlock::BitFlags<AccessFs> {
    AccessFs::from_all(TARGET) & !(AccessFs::MakeChar | AccessFs::MakeBlock)
}

/// The ruleset for `policy`, created and filled (its descriptor is kept for the child).
pub(super) fn ruleset(policy: &Policy) -> Result<RulesetCreated, ConfineError> {
    let fail = |e: &dyn std::fmt::Display| ConfineError(format!("Landlock: {e}"));
    let level = if policy.require {
        CompatLevel::HardRequirement
    } else {
        CompatLevel::BestEffort
    };
    let ruleset = Ruleset::default()
        .set_compatibility(level)
        .handle_access(AccessFs::from_all(TARGET))
        .and_then(|r| r.handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp))
        .and_then(|r| r.scope(Scope::from_all(TARGET)))
        .and_then(|r| r.create())
        .map_err(|e| fail(&e))?;
    let mut ruleset = ruleset
        .add_rules(path_beneath_rules(
            &policy.read_only,
            AccessFs::from_read(TARGET),
        ))
        .and_then(|r| {
            r.add_rules(
                policy
                    .read_write
                    .iter()
                    .map(|dir| Ok::<_, RulesetError>(PathBeneath::new(dir.as_ref(), writable()))),
            )
        })
        .and_then(|r| {
            r.add_rules(path_beneath_rules(
                &policy.devices,
                AccessFs::ReadFile | AccessFs::WriteFile,
            ))
        })
        .map_err(|e| fail(&e))?;
    let ports = match &policy.network {
        Network::Off => &[][..],
        Network::TcpPorts(ports) | Network::Fetch(ports) => ports,
    };
    for &port in ports {
        ruleset = ruleset
            .add_rule(NetPort::new(port, AccessNet::ConnectTcp))
            .map_err(|e| fail(&e))?;
    }
    Ok(ruleset)
}
