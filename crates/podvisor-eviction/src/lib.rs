//! The kubelet's node-pressure eviction and image garbage collection as plain data
//! (`pkg/kubelet/eviction`, `pkg/kubelet/images`): the signals and their thresholds, the
//! observations read from the node's summary, what a pass decides (node conditions, the
//! thresholds to act on), the order pods are evicted in, the messages, admission under
//! pressure, and which images to remove. The actors that measure and act are the
//! kubelet crate's; everything here is tested without them.

pub mod admit;
pub mod image_gc;
pub mod message;
pub mod observe;
pub mod rank;
pub mod signal;
pub mod state;
pub mod threshold;

pub use signal::{Pressure, Resource, Signal};
pub use state::{Manager, Observation, Observations, Pass};
pub use threshold::{Settings, Threshold, ThresholdError, Value};
