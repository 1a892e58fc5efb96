//! CUBIC — placeholder being written (see issue 2); replaced by the full model.
use super::{CongestionControl, ConnView, Window};
#[derive(Debug, Default, Clone)]
pub struct Cubic;
impl CongestionControl for Cubic {
    fn name(&self) -> &'static str { "cubic" }
    fn ssthresh(&mut self, _c: &ConnView, w: &Window) -> u32 { (w.cwnd * 717 / 1024).max(2) }
    fn cong_avoid(&mut self, c: &ConnView, acked: u32, w: &mut Window) { super::reno::Reno.cong_avoid(c, acked, w) }
}
