//! Load, reload and shutdown: discovery, the entries, every start in parallel (each in a
//! task of its own that records its outcome), one ready wait, the [`LoadReport`]; and
//! stopping them all.

use super::report::{shadowed_warnings, LoadError, LoadReport, LoadWarning, UntrustedReport};
use super::restart::{jitter, Decision, RestartPolicy};
use super::state::{Entry, EntryState, Inner, Pending};
use crate::discovery::{discover, Discovery, Found, SearchPath};
use crate::events::HostEvent;
use crate::extension::{Extension, Hub, Phase};
use crate::identity::Identity;
use crate::launcher::{self, Launched, StartError};
use crate::log::ExtLog;
use crate::manifest::{Manifest, TransportKind};
use crate::records::guard::Failure;
use crate::records::trust::Untrusted;
use crate::sandbox::view::SandboxView;
use serde_json::Map;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use zot_protocol::{HelloAck, PROTOCOL_VERSION};

/// How many untrusted extensions the untrusted log's line names; it counts the others.
const UNTRUSTED_NAMED: usize = 10;

/// How long the load report waits for the rest of the stderr of an extension that
/// exited while starting (its pipe is read after the exit is seen).
const STDERR_DRAIN: Duration = Duration::from_millis(200);

/// An extension that started.
struct Started {
    ext: Extension,
    transport: TransportKind,
    sandbox: Option<SandboxView>,
    tool_timeout: Option<Duration>,
}

impl Entry {
    /// Records that `started` runs for it, from now.
    fn run(&mut self, started: Started) {
        self.transport = started.transport;
        self.sandbox = started.sandbox;
        self.tool_timeout = started.tool_timeout;
        self.state = EntryState::Running(started.ext);
        self.started_at = Some(Instant::now());
    }

    /// Records that it could not be started, for `reason`: the event that tells it.
    fn not_started(&mut self, reason: String) -> HostEvent {
        self.state = EntryState::Error(reason.clone());
        HostEvent::ExtensionExited {
            extension: self.name.clone(),
            reason,
            code: None,
            signal: None,
            stopped: false,
        }
    }
}

impl Inner {
    /// Discovers and starts every enabled extension in parallel, then waits (at most the
    /// ready wait in total) for all of them to be ready.
    pub(super) async fn load(self: &Arc<Self>) -> LoadReport {
        let found = match self.discover().await {
            Ok(found) => found,
            Err(e) => {
                return LoadReport {
                    errors: vec![LoadError {
                        extension: String::new(),
                        error: format!("discovery failed: {e}"),
                    }],
                    ..LoadReport::default()
                }
            }
        };
        // Reported, not logged to the terminal: the CLI shows the report its way and the
        // sidecar carries it in `host_ready.warnings`.
        let shadowed = shadowed_warnings(&found);
        let generation = self.generation.fetch_add(1, Ordering::SeqCst) + 1;
        let deadline = Instant::now() + self.config.timeouts.ready;
        let mut report = LoadReport::default();
        let (mut entries, pending) = self.entries_of(found.found, &mut report);
        // Listed after the others: a running extension of the same name is found first.
        for w in &shadowed {
            ExtLog::open(&self.config.home.log_path(&w.extension)).warn(&w.warning);
        }
        report.warnings.extend(shadowed);
        for (f, untrusted) in found.untrusted {
            entries.push(self.untrusted_entry(f, untrusted, &mut report));
        }
        self.log_untrusted(&report.untrusted);
        report.fail_closed = entries
            .iter()
            .filter(|e| e.guard.blocks())
            .map(|e| e.name.clone())
            .collect();
        *self.entries.lock().unwrap() = entries;
        let outcomes = self.start_all(generation, pending);
        // Wait for the starts, at most the ready wait; the late ones go on.
        for outcome in outcomes {
            if tokio::time::timeout_at(deadline, outcome).await.is_err() {
                break;
            }
        }
        let running = self.report_starts(generation, &mut report);
        self.wait_ready(&running, deadline, &mut report).await;
        report
    }

    /// What exists, per the configuration's search path.
    async fn discover(&self) -> Result<Discovery, tokio::task::JoinError> {
        let search = SearchPath {
            explicit: self.config.explicit.clone(),
            cwd: self.config.cwd.clone(),
            home: self.config.home.clone(),
            installed: self.config.installed,
            project: self.config.project,
            global: self.config.global,
            trust_project: self.config.trust_project,
        };
        // Reading manifests and hashing project extensions for trust is file I/O.
        tokio::task::spawn_blocking(move || discover(&search)).await
    }

    /// An entry for each of `found`, in load order, and the enabled ones to start; a
    /// manifest's typos are logged and reported as warnings.
    fn entries_of(
        &self,
        found: Vec<Found>,
        report: &mut LoadReport,
    ) -> (Vec<Entry>, Vec<Arc<Pending>>) {
        let mut entries = Vec::new();
        let mut pending = Vec::new();
        let restart = self.restart_choices(report);
        for (rank, f) in found.into_iter().enumerate() {
            let name = f.name();
            let log = self.config.home.log_path(&name);
            for warning in f.manifest.iter().flat_map(Manifest::typo_warnings) {
                ExtLog::open(&log).warn(&warning);
                report.warnings.push(LoadWarning {
                    extension: name.clone(),
                    warning,
                });
            }
            let transport = f
                .manifest
                .as_ref()
                .map_or(TransportKind::Stdio, Manifest::transport);
            let (version, state, start) = match f.manifest {
                Err(e) => {
                    let message = e.to_string();
                    ExtLog::open(&log).warn(&message);
                    (String::new(), EntryState::Error(message), None)
                }
                Ok(m) if !m.enabled => (m.version, EntryState::Disabled, None),
                Ok(m) => {
                    let version = m.version.clone();
                    let start = Arc::new(Pending {
                        rank,
                        source: f.source,
                        dir: f.dir.clone(),
                        identity: f.identity.clone(),
                        manifest: m,
                        admitted: f.admitted.clone(),
                    });
                    pending.push(start.clone());
                    (version, EntryState::Starting, Some(start))
                }
            };
            let guard = self.guard_of(&f.identity, &log);
            let restart_on = restart
                .get(&name)
                .copied()
                .unwrap_or(self.config.restart.enabled);
            entries.push(Entry {
                name,
                version,
                source: f.source,
                dir: f.dir,
                identity: f.identity,
                log,
                transport,
                sandbox: None,
                tool_timeout: None,
                guard,
                state,
                start,
                restart_on,
                restarts: Default::default(),
                started_at: None,
            });
        }
        (entries, pending)
    }

    /// The user's choice, by extension name, of whether it is started again after it
    /// exits by itself (`settings.json`, `restart`); settings that cannot be read leave
    /// the policy's default, and the report says so.
    fn restart_choices(&self, report: &mut LoadReport) -> BTreeMap<String, bool> {
        match crate::records::settings::Settings::load(&self.config.home) {
            Ok(settings) => settings.restart,
            Err(e) => {
                report.warnings.push(LoadWarning {
                    extension: String::new(),
                    warning: format!(
                        "the settings cannot be read ({e}): restarts follow the default"
                    ),
                });
                BTreeMap::new()
            }
        }
    }

    /// The entry of a project extension the user has not trusted, reported. It has no
    /// log of its own: a repository's folders cost no file each, and write nothing into
    /// the log of the extension whose name they take ([`Inner::log_untrusted`]).
    fn untrusted_entry(&self, f: Found, untrusted: Untrusted, report: &mut LoadReport) -> Entry {
        let name = f.name();
        report.untrusted.push(UntrustedReport {
            extension: name.clone(),
            dir: f.dir.clone(),
            untrusted: untrusted.clone(),
        });
        Entry {
            name: name.clone(),
            version: f
                .manifest
                .as_ref()
                .map(|m| m.version.clone())
                .unwrap_or_default(),
            source: f.source,
            log: self.config.home.untrusted_log_path(),
            transport: f
                .manifest
                .as_ref()
                .map_or(TransportKind::Stdio, Manifest::transport),
            guard: self.guard_of(&f.identity, &self.config.home.untrusted_log_path()),
            dir: f.dir,
            identity: f.identity,
            sandbox: None,
            tool_timeout: None,
            state: EntryState::Untrusted(untrusted),
            start: None,
            restart_on: false,
            restarts: Default::default(),
            started_at: None,
        }
    }

    /// Whether the guard installed as `identity` fails closed; a record that cannot be
    /// read counts as failing closed, and `log` says why.
    fn guard_of(&self, identity: &Identity, log: &std::path::Path) -> Failure {
        let failure = crate::records::guard::load(&self.config.home, identity);
        if let Failure::Unreadable(why) = &failure {
            ExtLog::open(log).warn(&format!(
                "its guard record cannot be read ({why}): it fails closed"
            ));
        }
        failure
    }

    /// One line in the untrusted log for all of `untrusted`: how many, the first
    /// [`UNTRUSTED_NAMED`] by name and folder, and how to review them.
    fn log_untrusted(&self, untrusted: &[UntrustedReport]) {
        let Some(first) = untrusted.first() else {
            return;
        };
        let named: Vec<String> = untrusted
            .iter()
            .take(UNTRUSTED_NAMED)
            .map(|u| format!("{} ({}: {})", u.extension, u.dir.display(), u.untrusted.why))
            .collect();
        let more = match untrusted.len() - named.len() {
            0 => String::new(),
            n => format!(" and {n} more"),
        };
        ExtLog::open(&self.config.home.untrusted_log_path()).warn(&format!(
            "{} untrusted project extension(s) not started: {}{more}; `{}` reviews them",
            untrusted.len(),
            named.join(", "),
            first.untrusted.command
        ));
    }

    /// Starts all of `pending` in parallel, each in a task of its own that records its
    /// outcome in its entry, even after this load returned: a slow compile delays
    /// nothing. Returns those tasks.
    fn start_all(
        self: &Arc<Self>,
        generation: u64,
        pending: Vec<Arc<Pending>>,
    ) -> Vec<JoinHandle<()>> {
        let mut outcomes = Vec::new();
        for p in pending {
            let rank = p.rank;
            let me = self.clone();
            let start = tokio::spawn(async move { me.start(&p).await });
            self.starting.lock().unwrap().push(start.abort_handle());
            let me = self.clone();
            outcomes.push(tokio::spawn(async move {
                let result = match start.await {
                    Ok(result) => result,
                    // Stopped by shutdown or reload: nothing to record.
                    Err(e) if e.is_cancelled() => return,
                    // A bug, not the extension's doing: that one fails, the others go on.
                    Err(e) => Err(StartError::Aborted(e.to_string())),
                };
                me.started(generation, rank, result);
            }));
        }
        outcomes
    }

    /// Reports each entry as the ready wait found it (`loaded`, `errors`, `starting`, a
    /// stale grant's warning); from now on a start of this load that fails is told as
    /// an event. Returns the running extensions.
    fn report_starts(&self, generation: u64, report: &mut LoadReport) -> Vec<Extension> {
        let mut running = Vec::new();
        let entries = self.entries.lock().unwrap();
        self.reported.store(generation, Ordering::SeqCst);
        for e in entries.iter() {
            match &e.state {
                EntryState::Running(ext) => {
                    report.loaded.push(e.name.clone());
                    running.push(ext.clone());
                    if e.sandbox.as_ref().is_some_and(|s| s.grant_stale) {
                        report.warnings.push(LoadWarning {
                            extension: e.name.clone(),
                            warning: crate::sandbox::stale_warning(&e.name, &e.identity, &e.dir),
                        });
                    }
                }
                EntryState::Error(error) => report.errors.push(LoadError {
                    extension: e.name.clone(),
                    error: error.clone(),
                }),
                EntryState::Starting => report.starting.push(e.name.clone()),
                EntryState::Disabled | EntryState::Untrusted(_) => {}
            }
        }
        running
    }

    /// Waits until `deadline` for each of `running` to be ready: `ready` in the report,
    /// or an error if it exited meanwhile.
    async fn wait_ready(&self, running: &[Extension], deadline: Instant, report: &mut LoadReport) {
        for ext in running {
            // All were started already: waiting on each in turn against one deadline
            // waits for them in parallel.
            match ext.wait_ready(deadline).await {
                Phase::Ready => report.ready.push(ext.name().to_string()),
                Phase::Starting => {
                    let said = match ext.status().hello {
                        Some(_) => "it said hello, not ready",
                        None => "it has not said hello",
                    };
                    let warning = format!(
                        "not ready within {} ms ({said}): its registrations may still arrive",
                        self.config.timeouts.ready.as_millis()
                    );
                    ext.log().warn(&warning);
                    report.not_ready.push(ext.name().to_string());
                    report.warnings.push(LoadWarning {
                        extension: ext.name().to_string(),
                        warning,
                    });
                }
                Phase::Exited => {
                    let reason = ext.status().exit.map(|e| e.to_string()).unwrap_or_default();
                    // Its last words, usually why: the rest of its stderr may still be on
                    // its way when the exit is seen.
                    let said = match ext.log().last_stderr(STDERR_DRAIN).await {
                        Some(line) => format!(" (its last stderr line: {line})"),
                        None => String::new(),
                    };
                    report.errors.push(LoadError {
                        extension: ext.name().to_string(),
                        error: format!("exited while starting: {reason}{said}"),
                    });
                }
            }
        }
    }

    /// Records how the start of the extension at `rank` of load `generation` ended. One
    /// that ends after the load returned and failed is told as `extension_exited`; one of
    /// an earlier load (stopped meanwhile) is stopped.
    fn started(&self, generation: u64, rank: usize, result: Result<Started, StartError>) {
        let stale = self.generation.load(Ordering::SeqCst) != generation;
        let mut entries = self.entries.lock().unwrap();
        let entry = entries
            .get_mut(rank)
            .filter(|e| !stale && matches!(e.state, EntryState::Starting));
        let Some(entry) = entry else {
            drop(entries);
            self.stop_unwanted(result);
            return;
        };
        match result {
            Ok(started) => entry.run(started),
            Err(e) => {
                let event = entry.not_started(e.to_string());
                if self.reported.load(Ordering::SeqCst) != generation {
                    return; // In the load's report.
                }
                drop(entries);
                self.notes.push_own(event);
            }
        }
    }

    /// Stops what a start made after it was no longer wanted (a stop or a reload came
    /// meanwhile).
    fn stop_unwanted(&self, result: Result<Started, StartError>) {
        if let Ok(started) = result {
            let t = self.config.timeouts.clone();
            tokio::spawn(async move { started.ext.shutdown(t.shutdown, t.terminate).await });
        }
    }

    /// Starts one extension on its transport and hands the connection to the core.
    async fn start(self: Arc<Self>, p: &Pending) -> Result<Started, StartError> {
        let m = &p.manifest;
        let log = ExtLog::open(&self.config.home.log_path(&m.name));
        let request = launcher::Request {
            manifest: m,
            dir: &p.dir,
            identity: &p.identity,
            context: self.config.launch_context(),
            log: &log,
            run_grant: crate::sandbox::RunGrant::applies_to(p.source)
                .then_some(&self.config.run_grant),
            admitted: p.admitted.as_deref(),
        };
        let Launched {
            connection,
            transport,
            sandbox,
            paths,
        } = self
            .launcher
            .launch(request)
            .await
            .inspect_err(|e| log.warn(&e.to_string()))?;
        let hello_ack = HelloAck {
            protocol_version: PROTOCOL_VERSION,
            zot_version: env!("CARGO_PKG_VERSION").into(),
            provider: self.config.provider.clone(),
            model: self.config.model.clone(),
            cwd: paths.cwd,
            extension_dir: paths.extension_dir,
            data_dir: paths.data_dir,
            extra: Map::new(),
        };
        let notes = self.notes.clone();
        let hub: Arc<dyn Hub> = self;
        let ext = Extension::start(
            m.name.clone(),
            p.rank,
            log,
            connection,
            hello_ack,
            hub,
            notes,
        );
        Ok(Started {
            ext,
            transport,
            sandbox,
            tool_timeout: m.limits.tool_timeout_ms.map(Duration::from_millis),
        })
    }

    /// After `ext` exited: unless the host stopped it, starts it again when and if its
    /// entry's restarts say (in a task a stop aborts), and tells the application
    /// (`extension_restarted`, after its `extension_exited`).
    pub(super) fn exited_by_itself(self: &Arc<Self>, ext: &Extension) {
        let generation = self.generation.load(Ordering::SeqCst);
        let task = tokio::spawn(Self::restart(Arc::downgrade(self), ext.clone(), generation));
        let mut starting = self.starting.lock().unwrap();
        starting.retain(|t| !t.is_finished());
        starting.push(task.abort_handle());
    }

    async fn restart(me: std::sync::Weak<Self>, ext: Extension, generation: u64) {
        // `extension_exited` is queued before the phase turns `Exited`: waiting for it
        // keeps the events in order.
        ext.gone().await;
        let status = ext.status();
        let Some(exit) = status.exit.filter(|_| !status.stopped) else {
            return;
        };
        let after = exit.to_string();
        let Some(inner) = me.upgrade() else { return };
        let Some((rank, pending, decision)) = inner.decide_restart(&ext, &after) else {
            return;
        };
        let (delay, attempt) = match decision {
            Decision::Off => return,
            Decision::GiveUp => {
                let p = &inner.config.restart;
                ext.log().warn(&format!(
                    "exited {} times within {} s: not started again until the host reloads",
                    p.max_restarts + 1,
                    p.window.as_secs()
                ));
                return;
            }
            Decision::Restart { delay, attempt } => (delay, attempt),
        };
        ext.log().warn(&format!(
            "starting it again in {} ms (restart {attempt}) after: {after}",
            delay.as_millis()
        ));
        drop(inner);
        tokio::time::sleep(delay).await;
        let Some(inner) = me.upgrade() else { return };
        if inner.generation.load(Ordering::SeqCst) != generation || !inner.set_starting(rank, &ext)
        {
            return;
        }
        let result = inner.clone().start(&pending).await;
        let mut entries = inner.entries.lock().unwrap();
        let entry = entries.get_mut(rank).filter(|e| {
            inner.generation.load(Ordering::SeqCst) == generation
                && matches!(e.state, EntryState::Starting)
        });
        let Some(entry) = entry else {
            drop(entries);
            inner.stop_unwanted(result);
            return;
        };
        let event = match result {
            Ok(started) => {
                entry.run(started);
                entry.restarts.info.count += 1;
                HostEvent::ExtensionRestarted {
                    extension: entry.name.clone(),
                    attempt,
                    delay_ms: delay.as_millis() as u64,
                    after,
                }
            }
            Err(e) => entry.not_started(format!("not started again: {e}")),
        };
        drop(entries);
        inner.notes.push_own(event);
    }

    /// The restart decision for the entry running `ext`, which exited for `after`: its
    /// rank, what starts it, and the decision; `None` when the entry runs something
    /// else now (a reload) or cannot be started again.
    fn decide_restart(
        &self,
        ext: &Extension,
        after: &str,
    ) -> Option<(usize, Arc<Pending>, Decision)> {
        let mut entries = self.entries.lock().unwrap();
        let (rank, entry) = entries
            .iter_mut()
            .enumerate()
            .find(|(_, e)| matches!(&e.state, EntryState::Running(x) if x.is(ext)))?;
        let pending = entry.start.clone()?;
        let policy = RestartPolicy {
            enabled: entry.restart_on,
            ..self.config.restart.clone()
        };
        let now = Instant::now();
        let started = entry.started_at.unwrap_or(now);
        let decision = entry.restarts.after_exit(&policy, started, now, jitter());
        entry.restarts.info.last_exit = Some(after.to_string());
        Some((rank, pending, decision))
    }

    /// Marks the entry at `rank` starting again, if it still runs `ext` (exited).
    fn set_starting(&self, rank: usize, ext: &Extension) -> bool {
        let mut entries = self.entries.lock().unwrap();
        match entries.get_mut(rank) {
            Some(e) if matches!(&e.state, EntryState::Running(x) if x.is(ext)) => {
                e.state = EntryState::Starting;
                true
            }
            _ => false,
        }
    }

    /// Stops every running extension in parallel, and every start in flight; returns
    /// the names of those that were running.
    pub(super) async fn stop_all(&self) -> Vec<String> {
        self.generation.fetch_add(1, Ordering::SeqCst);
        for start in self.starting.lock().unwrap().drain(..) {
            start.abort();
        }
        for e in self.entries.lock().unwrap().iter_mut() {
            if matches!(e.state, EntryState::Starting) {
                e.state = EntryState::Error("stopped while starting".into());
            }
        }
        let running = self.running_all();
        let names = running.iter().map(|e| e.name().to_string()).collect();
        let mut tasks = tokio::task::JoinSet::new();
        for ext in running {
            let t = self.config.timeouts.clone();
            tasks.spawn(async move { ext.shutdown(t.shutdown, t.terminate).await });
        }
        while tasks.join_next().await.is_some() {}
        names
    }
}
