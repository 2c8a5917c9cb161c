//! The `strato` CLI as a library: the binary is `main.rs`; devstack's demo and the end-to-end tests use the
//! same client and live-log follower. See README.md in this directory.

pub mod api;
pub mod args;
mod commands;
pub mod config;
pub mod error;
pub mod follow;
pub mod render;
pub mod text;
pub mod vars;

use std::io::IsTerminal;

use clap::{CommandFactory, Parser};

pub use crate::error::{CliError, exit};
use crate::render::Out;

/// What every command works with.
pub(crate) struct Ctx {
    pub api: api::Api,
    pub ws: Option<String>,
    pub out: Out,
}

/// Parses `std::env::args` and runs the command; the process's exit code.
pub async fn main() -> u8 {
    let cli = match args::Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { exit::USAGE } else { exit::OK };
        }
    };
    let color = !cli.global.no_color
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        && std::io::stdout().is_terminal();
    match run(cli, color).await {
        Ok(()) => exit::OK,
        Err(e) => {
            let err_color = color && std::io::stderr().is_terminal();
            eprintln!("{}", e.render(err_color));
            e.exit_code()
        }
    }
}

async fn run(cli: args::Cli, color: bool) -> Result<(), CliError> {
    use args::Command as C;
    let g = &cli.global;
    let out = Out {
        format: g.output,
        color,
        interactive: std::io::stderr().is_terminal() && g.output == render::Format::Table,
    };
    match cli.command {
        C::Completions { shell } => {
            clap_complete::generate(shell, &mut args::Cli::command(), "strato", &mut std::io::stdout());
            Ok(())
        }
        C::Login(l) => commands::login(g, l).await,
        C::Profiles => commands::profiles(&out),
        command => {
            let r = config::resolve(
                g.profile.as_deref(),
                g.endpoint.as_deref(),
                g.ws_endpoint.as_deref(),
                g.token.as_deref(),
            )?;
            let ctx = Ctx {
                api: api::Api::new(&r.endpoint, r.token)?,
                ws: r.ws_endpoint,
                out,
            };
            commands::dispatch(&ctx, command).await
        }
    }
}
