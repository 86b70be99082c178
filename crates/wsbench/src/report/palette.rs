//! How the charts tell results apart: one colour per result for the first sixteen, none
//! repeated, and a line dash that changes every eight so two results whose colours a
//! colour-blind reader confuses still differ in their lines. The first eight colours are
//! Okabe–Ito's colour-blind-safe set (yellow darkened to read on white); the next eight
//! are Paul Tol's "muted" colours, darker or greyer than the first eight so they do not
//! pair up with them. The same index gives the same style in every chart, table swatch and
//! legend of a page; this module must never hand two of the first sixteen results one
//! colour (the browser test checks it in the rendered page).

/// Sixteen colours, each distinct: Okabe–Ito, then Paul Tol's muted set.
pub(super) const COLORS: [&str; 16] = [
    "#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000", "#8c6d1f", "#882255",
    "#332288", "#117733", "#999933", "#44aa99", "#aa4499", "#cc6677", "#6e6e6e",
];

/// Line dashes by block of eight results: solid, long dashes, dots (SVG `stroke-dasharray`).
const DASHES: [Option<&str>; 3] = [None, Some("9 3"), Some("2 3")];

/// The dash that marks a secondary line of a result (p50 beside p99, uncorrected beside
/// corrected latency); it overrides the result's own dash.
pub(super) const SECONDARY_DASH: &str = "5 4";

/// How one result is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Style {
    pub color: &'static str,
    /// `stroke-dasharray`, or solid.
    pub dash: Option<&'static str>,
}

/// The style of the `index`-th result.
pub(super) fn style(index: usize) -> Style {
    Style { color: COLORS[index % COLORS.len()], dash: DASHES[(index / 8) % DASHES.len()] }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sixteen_results_get_sixteen_colours() {
        let mut colors: Vec<&str> = (0..16).map(|i| style(i).color).collect();
        colors.sort_unstable();
        colors.dedup();
        assert_eq!(colors.len(), 16);
    }

    #[test]
    fn results_with_repeated_colours_differ_in_dash() {
        let styles: Vec<Style> = (0..24).map(style).collect();
        for (i, a) in styles.iter().enumerate() {
            for b in &styles[i + 1..] {
                assert_ne!(a, b);
            }
        }
        assert_eq!(style(0).dash, None);
        assert_eq!(style(8).dash, Some("9 3"));
    }
}
