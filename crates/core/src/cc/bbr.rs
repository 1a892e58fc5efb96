//! BBR v1 — placeholder being written (see issue 2); replaced by the full model.
use super::{CongestionControl, ConnView, Window};
#[derive(Debug, Default, Clone)]
pub struct Bbr;
impl CongestionControl for Bbr {
    fn name(&self) -> &'static str { "bbr" }
    fn ssthresh(&mut self, _c: &ConnView, w: &Window) -> u32 { w.ssthresh }
    fn cong_avoid(&mut self, c: &ConnView, acked: u32, w: &mut Window) { super::reno::Reno.cong_avoid(c, acked, w) }
}
