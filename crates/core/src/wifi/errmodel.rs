//! The per-MPDU error model of an HT20 link: the probability that one MPDU
//! of `bytes` sent at an MCS is received in error, from the link's SNR.
//!
//! Source: ns-3's `NistErrorRateModel` (src/wifi/model/nist-error-rate-model.cc,
//! ns-3.33-3.36 form with `GetQamBer`; G. Pei and T. R. Henderson, "Validation of
//! OFDM error rate model in ns-3", Boeing, 2010), which re-derives L. E. Miller's
//! NIST model ("Validation of 802.11a/UWB coexistence simulation", NIST, 2003):
//! the uncoded bit error rate of the subcarrier modulation in AWGN, then the
//! union bound of the punctured K = 7 convolutional code (Bhattacharyya
//! parameter D = √(4p(1−p)) and the code's distance spectrum), then
//! `(1 − Pe)^nbits` for a chunk of `nbits`. The receive-diversity gain is
//! ns-3's `InterferenceHelper::CalculateSnr`: with more receive antennas than
//! spatial streams the SNR is multiplied by antennas / streams ("gain offered by
//! diversity for AWGN").
//!
//! # Model in a nutshell
//! ```text
//!   snr    = 10^(snr_db/10) × max(1, antennas / streams)
//!   p      = BER_mod(snr)           BPSK ½erfc(√snr), QPSK ½erfc(√(snr/2)),
//!                                   M-QAM (√M−1)/(√M·log2√M)·erfc(√(snr / ⌊2(M−1)/3⌋))
//!   Pe     = min(1, c · Σ a_d · D^d),  D = √(4p(1−p))     (code rate's spectrum)
//!   PER    = 1 − (1 − Pe)^(8·bytes)
//! ```
//! `snr_db` is the station's SNR on one receive chain over the 20 MHz channel
//! (signal / (noise floor + interference), as ns-3 defines it); the same value
//! holds in both directions (a symmetric link). A station that supports MCS 8-15
//! has two antennas, otherwise one; the AP has as many as the station uses, so
//! one stream to a two-antenna station gains 3 dB, two streams gain nothing.
//!
//! # Left out
//! The PLCP header (L-SIG/HT-SIG at BPSK ½: a failure there loses the whole
//! PPDU; at the SNRs where MCS 0 works its 72 bits almost never fail),
//! fading (AWGN only: the error of each MPDU is independent), interference
//! from hidden stations, and the frequency-selective channel that makes
//! real MIMO links lose more than 3 dB on two streams.

/// Modulation and code of the HT MCS 0-7 (IEEE 802.11-2016 Table 19-27; MCS
/// 8-15 repeat them on two streams): constellation size M and ns-3's
/// `bValue` for the code rate (1 = ½, 2 = ⅔, 3 = ¾, 5 = ⅚).
pub const HT_MCS_MODULATION: [(u32, u32); 8] = [(2, 1), (4, 1), (4, 3), (16, 1), (16, 3), (64, 2), (64, 3), (64, 5)];

/// erfc(x), Chebyshev fit of W. H. Press et al., *Numerical Recipes in C*,
/// 2nd ed., §6.2 `erfcc`: fractional error below 1.2 × 10⁻⁷ everywhere
/// (the standard library has no erfc).
pub fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let ans = t
        * (-z * z - 1.26551223
            + t * (1.00002368
                + t * (0.37409196
                    + t * (0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))))
            .exp();
    if x >= 0.0 {
        ans
    } else {
        2.0 - ans
    }
}

/// Uncoded bit error rate of M-ary modulation at linear SNR `snr` (ns-3
/// `GetBpskBer`, `GetQpskBer`, `GetQamBer`; the QAM divisor ⌊2(M−1)/3⌋ is an
/// integer division there: 10 for 16-QAM, 42 for 64-QAM).
pub fn uncoded_ber(m: u32, snr: f64) -> f64 {
    match m {
        2 => 0.5 * erfc(snr.sqrt()),
        4 => 0.5 * erfc((snr / 2.0).sqrt()),
        _ => {
            let z = (snr / ((2 * (m - 1)) / 3) as f64).sqrt();
            let b = (m as f64).sqrt();
            (b - 1.0) / (b * b.log2()) * erfc(z)
        }
    }
}

/// Decoded bit error bound of the punctured K = 7 convolutional code for raw
/// BER `p` (ns-3 `CalculatePe`): first-event weights a_d from Miller's tables
/// 3.1.1/3.1.2 (rates ½, ⅔, ¾) and Haccoun & Bégin, IEEE Trans. Commun. 32(3),
/// 1984, table V (rate ⅚).
pub fn coded_ber(p: f64, b_value: u32) -> f64 {
    let d = (4.0 * p * (1.0 - p)).sqrt();
    let (scale, terms): (f64, &[(f64, i32)]) = match b_value {
        1 => (
            0.5,
            &[(36.0, 10), (211.0, 12), (1404.0, 14), (11633.0, 16), (77433.0, 18), (502690.0, 20), (3322763.0, 22), (21292910.0, 24), (134365911.0, 26)],
        ),
        2 => (
            1.0 / 4.0,
            &[(3.0, 6), (70.0, 7), (285.0, 8), (1276.0, 9), (6160.0, 10), (27128.0, 11), (117019.0, 12), (498860.0, 13), (2103891.0, 14), (8784123.0, 15)],
        ),
        3 => (
            1.0 / 6.0,
            &[(42.0, 5), (201.0, 6), (1492.0, 7), (10469.0, 8), (62935.0, 9), (379644.0, 10), (2253373.0, 11), (13073811.0, 12), (75152755.0, 13), (428005675.0, 14)],
        ),
        5 => (
            1.0 / 10.0,
            &[
                (92.0, 4),
                (528.0, 5),
                (8694.0, 6),
                (79453.0, 7),
                (792114.0, 8),
                (7375573.0, 9),
                (67884974.0, 10),
                (610875423.0, 11),
                (5427275376.0, 12),
                (47664215639.0, 13),
            ],
        ),
        _ => panic!("unknown code rate {b_value}"),
    };
    scale * terms.iter().map(|&(a, e)| a * d.powi(e)).sum::<f64>()
}

/// SNR (linear) that an HT MCS sees on a link of `snr_db` with `antennas`
/// receive antennas: ns-3's diversity gain antennas / streams when positive.
pub fn effective_snr(mcs: u32, snr_db: f64, antennas: u32) -> f64 {
    let streams = mcs / 8 + 1;
    let gain = if antennas > streams { antennas as f64 / streams as f64 } else { 1.0 };
    10f64.powf(snr_db / 10.0) * gain
}

/// Probability that an MPDU of `bytes` (the whole MPDU: header, payload, FCS)
/// sent at HT MCS `mcs` (0-15) is received in error at `snr_db` with
/// `antennas` receive antennas.
pub fn mpdu_error(mcs: u32, snr_db: f64, antennas: u32, bytes: u32) -> f64 {
    let (m, b) = HT_MCS_MODULATION[(mcs % 8) as usize];
    let p = uncoded_ber(m, effective_snr(mcs, snr_db, antennas));
    if p == 0.0 {
        return 0.0;
    }
    let pe = coded_ber(p, b).min(1.0);
    1.0 - (1.0 - pe).powf(8.0 * bytes as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs().max(1e-300)
    }

    #[test]
    fn erfc_matches_the_library_function_to_its_stated_accuracy() {
        // Python math.erfc: 0.5 → 0.4795001221869535, 2 → 0.004677734981047266, 4 → 1.541725790028002e-08
        for (x, want) in [(0.5, 0.4795001221869535), (2.0, 0.004677734981047266), (4.0, 1.541725790028002e-08), (-1.0, 1.8427007929497148)] {
            assert!(close(erfc(x), want, 2e-7), "erfc({x}) = {} vs {want}", erfc(x));
        }
    }

    #[test]
    fn uncoded_ber_is_ns3s_formula_per_modulation() {
        // snr 10 (10 dB): BPSK ½erfc(√10), QPSK ½erfc(√5), 16-QAM 0.375·erfc(1), 64-QAM (7/24)·erfc(√(10/42))
        assert!(close(uncoded_ber(2, 10.0), 3.872108215522037e-06, 1e-6));
        assert!(close(uncoded_ber(4, 10.0), 0.0007827011290012744, 1e-6));
        assert!(close(uncoded_ber(16, 10.0), 0.05898720264385693, 1e-6));
        assert!(close(uncoded_ber(64, 10.0), 0.14296128012128229, 1e-6));
    }

    #[test]
    fn per_of_a_1538_byte_mpdu_falls_from_one_to_zero_across_each_mcs_threshold() {
        // Values from the same formulas in double precision (Python, math.erfc), one antenna.
        let cases = [
            (0, 3.5, 1538, 0.41953305925171913),
            (0, 4.5, 1538, 0.014382633089353392),
            (4, 16.5, 1538, 0.14280252205456312),
            (4, 17.5, 1538, 0.00518908701481835),
            (7, 23.5, 1538, 0.22556120656688683),
            (7, 24.5, 1538, 0.010724548553459612),
            (3, 13.0, 90, 0.031187291540559325),
        ];
        for (mcs, snr, bytes, want) in cases {
            let got = mpdu_error(mcs, snr, 1, bytes);
            assert!(close(got, want, 1e-4), "MCS {mcs} at {snr} dB: {got} vs {want}");
        }
    }

    #[test]
    fn two_antennas_give_one_stream_3_db_and_two_streams_nothing() {
        assert!(close(effective_snr(7, 20.0, 2), 200.0, 1e-12));
        assert!(close(effective_snr(15, 20.0, 2), 100.0, 1e-12));
        // MCS 15 on two antennas sees the SNR of MCS 7 on one.
        assert!(close(mpdu_error(15, 21.0, 2, 1538), mpdu_error(7, 21.0, 1, 1538), 1e-12));
        assert!(close(mpdu_error(7, 18.0, 2, 1538), mpdu_error(7, 18.0 + 10.0 * 2f64.log10(), 1, 1538), 1e-9));
    }

    #[test]
    fn a_shorter_mpdu_fails_less_often() {
        let long = mpdu_error(3, 13.0, 1, 1538);
        let short = mpdu_error(3, 13.0, 1, 90);
        assert!(short < long && short > 0.0);
        // (1 − PER) scales as a power of the length: (1 − short)^(1538/90) = 1 − long.
        assert!(close((1.0 - short).powf(1538.0 / 90.0), 1.0 - long, 1e-9));
    }
}
