//! The split-job driver (cross-group moves). Filled in with issue 4.

use std::sync::Arc;

use crate::node::NodeCore;

pub fn spawn_driver(_core: Arc<NodeCore>) {}
