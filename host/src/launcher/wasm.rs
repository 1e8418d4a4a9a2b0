//! A component started in the sandbox: compiled (or loaded from the cache), its
//! policy what the manifest asks and the grant for this very component gives.

use super::{Launched, Request, SeenPaths, StartError, UNSEEN};
use crate::component::Kind;
use crate::manifest::TransportKind;
use crate::sandbox;
use crate::sandbox::view::{Granted, Running, SandboxView};
use crate::transport::wasm::{self, WasmSpec};
use std::path::PathBuf;

/// A component in the sandbox, with what the manifest asks and the user granted for
/// this very component (a grant given to another build of it is not applied).
pub(super) async fn start(
    request: &Request<'_>,
    component: PathBuf,
) -> Result<Launched, StartError> {
    let Request {
        manifest: m,
        identity,
        context,
        log,
        run_grant,
        ..
    } = request;
    let home = context.home;
    let failed = |error| StartError::Component {
        wasm: component.clone(),
        error,
    };
    // The hash the grant is bound to: the component's entry is checked while the
    // component is hashed, and used only if it has that hash (the grant is applied below
    // only then too).
    let granted_sha = crate::records::grants::load(home, identity)
        .ok()
        .flatten()
        .map(|g| g.sha256);
    let loaded = wasm::prepare(
        &component,
        &home.cache_dir(),
        context.compiler,
        granted_sha.as_deref(),
        log,
    )
    .await
    .map_err(failed)?;
    if m.mcp.is_some() && loaded.kind() == Kind::Reactor {
        return Err(StartError::NotMcp { wasm: component });
    }
    if loaded.kind() == Kind::Preview1 && !m.permissions.http.is_empty() {
        let why = "it asks for HTTP (`permissions.http`), and WASI preview 1 has no network: \
                   build it as a component (wasm32-wasip2) to reach the network";
        return Err(failed(crate::component::ComponentError::CoreModule(
            why.into(),
        )));
    }
    let (decision, grant) = sandbox::for_manifest(
        home,
        identity,
        m,
        context.cwd,
        &loaded.sha256,
        *run_grant,
        log,
    );
    let paths = SeenPaths {
        extension_dir: UNSEEN.into(),
        cwd: match &decision.policy.cwd {
            Some(granted) => granted.display().to_string(),
            None => UNSEEN.into(),
        },
        data_dir: decision.policy.data_mount().to_string(),
    };
    let sandbox = SandboxView {
        component: Some(loaded.kind()),
        built_with: loaded.built_with().map(str::to_string),
        stdin: loaded.stdin(),
        sha256: Some(loaded.sha256.clone()),
        asked: m.permissions.clone(),
        limits: None,
        granted: grant
            .applied()
            .map(|g| Granted::Applied(g.permissions.clone())),
        grant_stale: matches!(grant, sandbox::GrantState::Stale(_)),
        running: Some(Running {
            withheld: decision.withheld,
            run_grant: run_grant
                .map(|r| r.permissions().iter().map(ToString::to_string).collect())
                .unwrap_or_default(),
            memory_mb: (decision.policy.memory_bytes >> 20) as u64,
            caps: decision.policy.limits,
        }),
    };
    let connection = wasm::start(
        loaded,
        WasmSpec {
            policy: decision.policy,
            log: (*log).clone(),
            guest_output: true,
            max_frame: context.max_frame,
        },
    )
    .map_err(failed)?;
    Ok(Launched {
        connection,
        transport: TransportKind::Wasm,
        sandbox: Some(sandbox),
        paths,
    })
}
