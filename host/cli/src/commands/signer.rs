//! `zot ext signer`: the keys the user's settings require of what is installed from a
//! source, or from under a prefix of sources (`$ZOT_HOME/settings.json`, `signers`). The
//! library keeps and applies them; this lists, adds and removes.

use crate::output::error::{CliError, Context as _};
use crate::output::terminal;
use zot_host::manage::install::signature;
use zot_host::manage::paths::ZotHome;
use zot_host::manage::records::Settings;
use zot_host::terminal_text::one_line;

#[derive(clap::Args)]
pub(crate) struct SignerArgs {
    #[command(subcommand)]
    action: Option<Action>,
}

#[derive(clap::Subcommand)]
enum Action {
    /// List every source and its keys (the default).
    List {
        /// Print JSON: each source to its keys.
        #[arg(long)]
        json: bool,
    },
    /// Require a signature by KEY of what is installed from SOURCE (a git URL or a
    /// folder; ending in `/`, everything under it), or by another key listed for it.
    Add {
        source: String,
        /// A minisign public key (`RW…`) or its `.pub` file.
        key: String,
    },
    /// Stop requiring KEY (without one, every key) of SOURCE.
    Remove { source: String, key: Option<String> },
}

pub(crate) fn run(home: &ZotHome, args: SignerArgs) -> Result<(), CliError> {
    match args.action.unwrap_or(Action::List { json: false }) {
        Action::List { json } => {
            let settings = Settings::load(home).context("signer list")?;
            if json {
                let text =
                    serde_json::to_string_pretty(&settings.signers).expect("JSON serialises");
                terminal::print_line(&text);
            } else if settings.signers.is_empty() {
                say!("No signers: nothing needs a signature unless --require-signature asks.");
            } else {
                for (source, keys) in &settings.signers {
                    say!("{}", one_line(source));
                    for key in keys {
                        say!("  {}", one_line(key));
                    }
                }
            }
        }
        Action::Add { source, key } => {
            let what = format!("signer add {source}");
            let source = signature::signer_source(&source).context(&what)?;
            let signer = signature::Signer::parse(&key).context(&what)?;
            let added = signature::add_signer(home, &source, &signer).context(&what)?;
            match added {
                true => say!(
                    "Installs and updates from {} now need a signature by {}.",
                    one_line(&source),
                    signer.key
                ),
                false => say!("{} already signs {}.", signer.key, one_line(&source)),
            }
        }
        Action::Remove { source, key } => {
            let what = format!("signer remove {source}");
            let source = signature::signer_source(&source).context(&what)?;
            let key = key
                .map(|k| signature::Signer::parse(&k).map(|s| s.key))
                .transpose()
                .context(&what)?;
            let removed = signature::remove_signer(home, &source, key.as_deref()).context(&what)?;
            say!("Removed {removed} key(s) of {}.", one_line(&source));
        }
    }
    Ok(())
}
