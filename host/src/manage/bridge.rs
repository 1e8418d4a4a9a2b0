//! One extension served to an outer host over a pair of byte streams, as if it were a
//! stdio extension: what `zot ext run` does with stdin and stdout, so that any host that
//! speaks the protocol over stdio gets the sandbox. The extension is started by the same
//! [`Transports`] launcher `zot host` uses, with the same sandbox and grants.

use crate::budget::Budget;
use crate::launcher::{Launched, Launcher, Request, SeenPaths, Transports};
use crate::log::ExtLog;
use crate::transport::{input_lines, ExitReason, Inbound, Outbound};
use std::future::Future;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use zot_protocol::{encode, HostFrame};

/// Serves the extension of `request` to the outer host on `input`/`output` until it is
/// gone: its input closes when `input` ends, and `stop` (e.g. Ctrl-C) stops it at once.
/// Frames from the outer host reach it with the deadlines `request.context.timeouts` give
/// them, `hello_ack` telling it the paths as it sees them ([`SeenPaths`]); a line that
/// is not JSON, or longer than `request.context.max_frame` (never held beyond that many
/// bytes), is skipped with a warning, JSON that is no known frame is passed on. Its
/// frames go to `output`, one per line. Diagnostics go to `request.log`. Returns its
/// exit.
pub async fn serve_stdio<R, W>(
    request: Request<'_>,
    input: R,
    mut output: W,
    stop: impl Future<Output = ()>,
) -> Result<ExitReason, String>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin,
{
    let (context, log) = (request.context, request.log);
    let Launched {
        connection, paths, ..
    } = Transports
        .launch(request)
        .await
        .map_err(|e| e.to_string())?;
    let mut forward = tokio::spawn(forward_input(
        input_lines(input, context.max_frame),
        connection.outbound.clone(),
        context.max_frame,
        context.timeouts.clone(),
        paths,
        log.clone(),
    ));

    let mut inbound = connection.inbound;
    let mut input_done = false;
    tokio::pin!(stop);
    loop {
        tokio::select! {
            item = inbound.recv() => match item {
                Some(Inbound::Line(line, _)) => {
                    let ok = output.write_all(&line).await.is_ok()
                        && output.write_all(b"\n").await.is_ok()
                        && output.flush().await.is_ok();
                    if !ok {
                        connection.control.kill();
                    }
                }
                Some(Inbound::Oversize { len, .. }) => log.warn(&format!(
                    "dropped a {len}-byte frame: longer than the frame size limit"
                )),
                None => break,
            },
            _ = &mut forward, if !input_done => {
                input_done = true;
                connection.control.close_input();
            }
            () = &mut stop => connection.control.kill(),
        }
    }
    let exit = connection
        .exit
        .await
        .map_err(|_| "the extension vanished".to_string())?;
    if exit.code() != Some(0) {
        log.warn(&format!("component ended: {exit}"));
    }
    Ok(exit)
}

/// Feeds the outer host's lines to the extension until they end: decoded, `hello_ack`
/// rewritten to the paths the extension sees, each with its frame's deadline.
async fn forward_input(
    mut lines: crate::transport::LineReader,
    outbound: crate::transport::FrameSink,
    max_frame: usize,
    timeouts: crate::Timeouts,
    paths: SeenPaths,
    log: ExtLog,
) {
    while let Some(item) = lines.recv().await {
        let line = match item {
            Inbound::Line(line, _) => line,
            Inbound::Oversize { len, .. } => {
                log.warn(&format!(
                    "skipped a {len}-byte input line: longer than the frame size limit \
                     ({max_frame} bytes)"
                ));
                continue;
            }
        };
        let (budget, line) = match HostFrame::decode(&line) {
            Ok(HostFrame::HelloAck(mut ack)) => {
                ack.extension_dir = paths.extension_dir.clone();
                ack.data_dir = paths.data_dir.clone();
                ack.cwd = paths.cwd.clone();
                let frame = HostFrame::HelloAck(ack);
                (Budget::for_frame(&frame, &timeouts, None), encode(&frame))
            }
            Ok(frame) => (Budget::for_frame(&frame, &timeouts, None), encode(&frame)),
            // Not ours to judge: JSON that is no frame this host knows reaches the
            // extension as the host sent it (a one-way budget). A line that is not JSON
            // (or not UTF-8) is no frame at all: skipped, the extension goes on.
            Err(_) => match serde_json::from_slice::<serde_json::Value>(&line) {
                Ok(value) => (Budget::ONE_WAY, encode(&value)),
                Err(e) => {
                    log.warn(&format!("skipped an input line that is not JSON: {e}"));
                    continue;
                }
            },
        };
        if outbound
            .send(Outbound {
                budget,
                line,
                room: None,
            })
            .await
            .is_err()
        {
            return;
        }
    }
}
