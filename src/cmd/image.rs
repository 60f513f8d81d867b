//! `faultline image`: builds (or finds) the node image and prints its tag.

use clap::Args;
use std::path::PathBuf;

/// Options of `faultline image`.
#[derive(Args, Debug, Clone)]
#[command(long_about = "Builds the node image faultline's Docker clusters and docker-compose.yml \
use: the static refkv server and the static sandbox on an empty base, tagged \
faultline-refkv:<content hash> and faultline-refkv:latest. Nothing is pulled; an image with \
the same content is reused. Prints the tag.")]
pub struct ImageArgs {
    /// Use this static server binary instead of building refkv from the workspace.
    #[arg(long, value_name = "PATH")]
    pub db_binary: Option<PathBuf>,
}

pub async fn build(args: ImageArgs) -> anyhow::Result<()> {
    crate::docker::check_engine().await?;
    let root = crate::image::workspace_root();
    let server = match (&args.db_binary, &root) {
        (Some(p), _) => {
            crate::image::check_static_binary(p)?;
            p.clone()
        }
        (None, Some(root)) => crate::image::build_static_server(root).await?,
        (None, None) => anyhow::bail!("the faultline sources are not next to this binary: pass --db-binary"),
    };
    let pause_root = root.unwrap_or_else(|| std::env::temp_dir().join("faultline"));
    let pause = crate::image::build_pause(&pause_root).await?;
    let image = crate::image::ensure_image(&server, &pause).await?;
    println!("{} ({}){}", image.tag, image.id, if image.built { "" } else { ", already built" });
    Ok(())
}
