//! `faultline image`: builds (or finds) the refkv node image and prints its tag.

use crate::db::DbKind;
use clap::Args;
use std::path::PathBuf;

/// Options of `faultline image`.
#[derive(Args, Debug, Clone)]
#[command(
    long_about = "Builds the node image faultline's Docker clusters and docker-compose.yml \
use: the static refkv server and the static sandbox on an empty base, tagged \
faultline-refkv:<content hash> and faultline-refkv:latest. Nothing is pulled; an image with \
the same content is reused. Prints the tag."
)]
pub struct ImageArgs {
    /// Use this static server binary instead of building refkv from the workspace.
    #[arg(long, value_name = "PATH")]
    pub db_binary: Option<PathBuf>,
}

pub async fn build(args: ImageArgs) -> anyhow::Result<()> {
    crate::docker::check_engine().await?;
    let refkv = DbKind::Refkv.build(1);
    let image =
        crate::runner::launch::node_image(refkv.as_ref(), None, args.db_binary.as_deref()).await?;
    println!(
        "{} ({}){}",
        image.tag,
        image.id,
        if image.built { "" } else { ", already built" }
    );
    Ok(())
}
