//! `vigie docs`: prints generated documentation (`tables`: docs/tables.md).

use std::process::ExitCode;

use anyhow::Result;

use super::Ctx;

/// Arguments of `vigie docs`.
#[derive(Debug, clap::Args)]
pub struct DocsArgs {
    /// What to print: `tables`.
    what: String,
}

impl DocsArgs {
    /// Runs `vigie docs`.
    pub fn run(self, _ctx: &Ctx) -> Result<ExitCode> {
        let Self { what } = self;
        anyhow::ensure!(
            what == "tables",
            "unknown documentation {what:?}: try `tables`"
        );
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        print!("{}", rt.block_on(vigie::sql::docs::tables_markdown())?);
        Ok(ExitCode::SUCCESS)
    }
}
