//! The host-side caps of a component, in one table: how much of each it asks for in its
//! manifest's `limits`, how much the user grants (`zot ext grant NAME -p disk:1024`), and
//! what is in force.
//!
//! Every limit works as memory always has: unset, the default; asked at or below the
//! default, what is asked (lowering needs no grant); asked above it, at most what the
//! user granted (`min(asked, granted)`, never less than the default). A grant never
//! gives more than the manifest asks.

use super::SandboxError;
use serde::{Deserialize, Serialize};

/// The largest memory limit a manifest may ask for.
pub const MAX_MEMORY_MB: u64 = 4096;

/// The memory of a confined classic extension that asks for none, MiB.
pub const CONFINED_MEMORY_MB: u64 = 1024;

/// One kind of host-side cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Limit {
    /// Linear memory, MiB.
    Memory,
    /// Bytes stored in `/data`, MiB.
    Disk,
    /// WASI resource-table entries: open files and directories, streams, pollables,
    /// `wasi:http` fields, requests and responses.
    Resources,
    /// Outgoing HTTP requests in flight at once.
    HttpRequests,
    /// The in-memory size of one `wasi:http` fields (headers/trailers) resource, KiB.
    FieldKib,
}

/// What the table says of one limit.
pub struct Spec {
    /// Its field in the manifest's `limits` and in a grant file.
    pub field: &'static str,
    /// `limits.FIELD`, as manifest errors name it.
    pub path: &'static str,
    /// How `zot ext grant -p` names it (`memory:MB`).
    pub permission: &'static str,
    /// What the number counts, for messages (`MiB`).
    pub unit: &'static str,
    pub default: u64,
    pub max: u64,
}

impl Limit {
    /// Every limit, in the order they are shown.
    pub const ALL: [Limit; 5] = [
        Limit::Memory,
        Limit::Disk,
        Limit::Resources,
        Limit::HttpRequests,
        Limit::FieldKib,
    ];

    /// Its row of the table.
    pub const fn spec(self) -> Spec {
        let (field, path, permission, unit, default, max) = match self {
            Limit::Memory => (
                "memory_mb",
                "limits.memory_mb",
                "memory",
                "MiB",
                64,
                MAX_MEMORY_MB,
            ),
            Limit::Disk => ("disk_mb", "limits.disk_mb", "disk", "MiB", 256, 16_384),
            Limit::Resources => (
                "resources",
                "limits.resources",
                "resources",
                "entries",
                1000,
                100_000,
            ),
            Limit::HttpRequests => (
                "http_requests",
                "limits.http_requests",
                "http_requests",
                "requests",
                16,
                1000,
            ),
            Limit::FieldKib => (
                "field_kib",
                "limits.field_kib",
                "field_kib",
                "KiB",
                32,
                1024,
            ),
        };
        Spec {
            field,
            path,
            permission,
            unit,
            default,
            max,
        }
    }

    /// The limit `grant -p` names `permission` (`memory`, `disk`, …).
    pub fn from_permission(permission: &str) -> Option<Limit> {
        Limit::ALL
            .into_iter()
            .find(|l| l.spec().permission == permission)
    }

    /// What a manifest's `asked` caps ask for (the default when they name none).
    pub fn asked(self, asked: &Caps) -> u64 {
        asked.get(self).unwrap_or(self.spec().default)
    }

    /// The most a grant's `granted` caps allow (never less than the default).
    pub fn granted(self, granted: &Caps) -> u64 {
        let default = self.spec().default;
        granted.get(self).unwrap_or(default).max(default)
    }

    /// In force: what is asked, but no more than what is granted.
    pub fn in_force(self, asked: &Caps, granted: &Caps) -> u64 {
        self.asked(asked).min(self.granted(granted))
    }

    /// Its default for a confined classic extension: memory is the process's data
    /// (`RLIMIT_DATA`), [`CONFINED_MEMORY_MB`], since a native runtime needs more than a
    /// component's linear memory; the others as for a component.
    pub const fn confined_default(self) -> u64 {
        match self {
            Limit::Memory => CONFINED_MEMORY_MB,
            Limit::Disk | Limit::Resources | Limit::HttpRequests | Limit::FieldKib => {
                self.spec().default
            }
        }
    }

    /// In force for a confined classic extension: as [`Limit::in_force`], from
    /// [`Limit::confined_default`].
    pub fn in_force_confined(self, asked: &Caps, granted: &Caps) -> u64 {
        let default = self.confined_default();
        let granted = granted.get(self).unwrap_or(default).max(default);
        asked.get(self).unwrap_or(default).min(granted)
    }

    /// Parses a value the user grants: 1 to the limit's max.
    pub fn parse(self, value: &str) -> Result<u64, SandboxError> {
        value
            .parse()
            .ok()
            .filter(|v| (1..=self.spec().max).contains(v))
            .ok_or_else(|| SandboxError::BadLimit {
                limit: self,
                value: value.to_string(),
            })
    }

    /// The limit in plain words, for people deciding what to grant.
    pub fn words(self, value: u64) -> String {
        match self {
            Limit::Memory => format!("use up to {value} MiB of memory"),
            Limit::Disk => format!("store up to {value} MiB in its data directory"),
            Limit::Resources => {
                format!("hold up to {value} open files, streams and HTTP objects at once")
            }
            Limit::HttpRequests => format!("make up to {value} HTTP requests at once"),
            Limit::FieldKib => format!("use HTTP header sets of up to {value} KiB each"),
        }
    }

    /// How a component that reaches the limit is told: `disk quota (256 MiB)`.
    pub fn named(self, value: u64) -> String {
        let name = match self {
            Limit::Memory => "memory limit",
            Limit::Disk => "disk quota",
            Limit::Resources => "resource limit",
            Limit::HttpRequests => "concurrent HTTP request limit",
            Limit::FieldKib => "HTTP field size limit",
        };
        format!("{name} ({value} {})", self.spec().unit)
    }
}

/// A number for some of the [`Limit`]s, the others unset: what a manifest's `limits`
/// ask (`manifest::Limits::caps`) or what the user granted (`Grant::caps`). In JSON, one
/// field per limit ([`Spec::field`]), present only when set: the same in `extension.json`,
/// in a grant file and in `zot ext list --json`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Caps {
    /// Linear memory, in MiB (default 64).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mb: Option<u64>,
    /// Bytes stored in `/data`, in MiB (default 256).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_mb: Option<u64>,
    /// WASI resource-table entries: open files, streams, `wasi:http` objects (default
    /// 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<u64>,
    /// Outgoing HTTP requests in flight at once (default 16).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_requests: Option<u64>,
    /// Size of one `wasi:http` fields (headers) resource, in KiB (default 32).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_kib: Option<u64>,
}

impl Caps {
    /// The value set for `limit`, if any.
    pub fn get(&self, limit: Limit) -> Option<u64> {
        let mut caps = *self;
        *caps.slot(limit)
    }

    /// Where the value of `limit` is kept.
    pub fn slot(&mut self, limit: Limit) -> &mut Option<u64> {
        match limit {
            Limit::Memory => &mut self.memory_mb,
            Limit::Disk => &mut self.disk_mb,
            Limit::Resources => &mut self.resources,
            Limit::HttpRequests => &mut self.http_requests,
            Limit::FieldKib => &mut self.field_kib,
        }
    }
}

/// Memory a component gets unless its manifest asks (and the user grants) more.
pub const DEFAULT_MEMORY_MB: u64 = Limit::Memory.spec().default;

/// The numbers in force for one component, one per [`Limit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct InForce {
    pub memory_mb: u64,
    pub disk_mb: u64,
    pub resources: u64,
    pub http_requests: u64,
    pub field_kib: u64,
}

impl InForce {
    /// Every limit at its default.
    pub fn defaults() -> InForce {
        InForce::decide(&Caps::default(), &Caps::default())
    }

    /// What is `asked` ∩ what is `granted`.
    pub fn decide(asked: &Caps, granted: &Caps) -> InForce {
        let f = |l: Limit| l.in_force(asked, granted);
        InForce {
            memory_mb: f(Limit::Memory),
            disk_mb: f(Limit::Disk),
            resources: f(Limit::Resources),
            http_requests: f(Limit::HttpRequests),
            field_kib: f(Limit::FieldKib),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(json: &str) -> Caps {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn defaults_and_maxima() {
        let d = InForce::defaults();
        assert_eq!(
            (
                d.memory_mb,
                d.disk_mb,
                d.resources,
                d.http_requests,
                d.field_kib
            ),
            (64, 256, 1000, 16, 32)
        );
        assert_eq!(Limit::Disk.spec().max, 16_384);
        assert_eq!(Limit::Memory.spec().max, MAX_MEMORY_MB);
    }

    #[test]
    fn asked_above_the_default_needs_a_grant_and_below_it_does_not() {
        let asks = limits(r#"{"disk_mb":1024,"resources":10,"http_requests":64}"#);
        let none = InForce::decide(&asks, &Caps::default());
        assert_eq!(
            none.disk_mb, 256,
            "asked more, nothing granted: the default"
        );
        assert_eq!(none.resources, 10, "asked less: in force without a grant");
        assert_eq!(none.http_requests, 16);
        let grant: Caps = serde_json::from_str(r#"{"disk_mb":512,"http_requests":1000}"#).unwrap();
        let some = InForce::decide(&asks, &grant);
        assert_eq!(some.disk_mb, 512, "granted less than asked: the grant");
        assert_eq!(some.http_requests, 64, "granted more than asked: the ask");
        assert_eq!(some.memory_mb, 64);
    }

    #[test]
    fn parse_is_one_to_the_max() {
        assert_eq!(Limit::Disk.parse("1024").unwrap(), 1024);
        assert!(Limit::Disk.parse("0").is_err());
        assert!(Limit::Disk.parse("16385").is_err());
        assert!(Limit::Resources.parse("many").is_err());
        assert_eq!(
            Limit::Memory.parse("99999").unwrap_err().to_string(),
            "memory:99999: give a number of MiB, 1 to 4096"
        );
        assert_eq!(Limit::from_permission("disk"), Some(Limit::Disk));
        assert_eq!(Limit::from_permission("disk_mb"), None);
    }

    #[test]
    fn each_limit_has_its_own_field_and_permission() {
        let mut fields: Vec<_> = Limit::ALL.iter().map(|l| l.spec().field).collect();
        let mut permissions: Vec<_> = Limit::ALL.iter().map(|l| l.spec().permission).collect();
        fields.dedup();
        permissions.dedup();
        assert_eq!((fields.len(), permissions.len()), (5, 5));
        for l in Limit::ALL {
            assert!(l.spec().default <= l.spec().max);
            assert!(l
                .named(l.spec().default)
                .contains(&l.spec().default.to_string()));
        }
        assert_eq!(Limit::Disk.named(256), "disk quota (256 MiB)");
    }

    /// Each limit's [`Spec::field`] is the JSON field [`Caps`] keeps it in.
    #[test]
    fn each_limit_is_kept_in_its_field() {
        for limit in Limit::ALL {
            let mut caps = Caps::default();
            *caps.slot(limit) = Some(7);
            assert_eq!(caps.get(limit), Some(7));
            let json = format!(r#"{{"{}":7}}"#, limit.spec().field);
            assert_eq!(serde_json::to_string(&caps).unwrap(), json);
            assert_eq!(serde_json::from_str::<Caps>(&json).unwrap(), caps);
        }
    }

    /// A grant file and a manifest's `limits` written before [`Caps`] was shared read and
    /// write back byte for byte; a grant file's unknown field is still ignored.
    #[test]
    fn old_grant_files_and_manifests_round_trip() {
        let grant_file = r#"{
  "sha256": "375322e6",
  "permissions": {
    "data_dir": true,
    "cwd": "read",
    "env": [
      "TOKEN"
    ]
  },
  "memory_mb": 96,
  "disk_mb": 1024,
  "resources": 10,
  "http_requests": 32,
  "field_kib": 64
}"#;
        let grant: crate::records::Grant = serde_json::from_str(grant_file).unwrap();
        assert_eq!(grant.caps.memory_mb, Some(96));
        assert_eq!(grant.caps.field_kib, Some(64));
        assert_eq!(serde_json::to_string_pretty(&grant).unwrap(), grant_file);
        let partial = r#"{"sha256":"","permissions":{"data_dir":true},"disk_mb":512}"#;
        let grant: crate::records::Grant = serde_json::from_str(partial).unwrap();
        assert_eq!(grant.caps.get(Limit::Disk), Some(512));
        assert_eq!(grant.caps.get(Limit::Memory), None);
        assert_eq!(serde_json::to_string(&grant).unwrap(), partial);
        let with_unknown: crate::records::Grant =
            serde_json::from_str(r#"{"sha256":"","disk_mb":512,"later":1}"#).unwrap();
        assert_eq!(with_unknown, grant);

        use crate::manifest::{Limits, Manifest};
        let manifest = r#"{"name":"g","version":"","exec":null,"args":[],"language":"","description":"","enabled":true,"wasm":"g.wasm","permissions":{"data_dir":true},"limits":{"memory_mb":128,"disk_mb":1024,"resources":10,"http_requests":32,"field_kib":64,"tool_timeout_ms":500}}"#;
        let m: Manifest = serde_json::from_str(manifest).unwrap();
        assert_eq!(m.limits.caps.http_requests, Some(32));
        assert_eq!(m.limits.tool_timeout_ms, Some(500));
        assert_eq!(serde_json::to_string(&m).unwrap(), manifest);
        for limits in [r#"{}"#, r#"{"tool_timeout_ms":500}"#, r#"{"resources":10}"#] {
            let parsed: Limits = serde_json::from_str(limits).unwrap();
            assert_eq!(serde_json::to_string(&parsed).unwrap(), limits);
        }
        assert!(serde_json::from_str::<Limits>(r#"{"cpu":1}"#).is_err());
        assert_eq!(
            Limits::FIELDS,
            [
                "memory_mb",
                "disk_mb",
                "resources",
                "http_requests",
                "field_kib",
                "tool_timeout_ms"
            ]
        );
    }
}
