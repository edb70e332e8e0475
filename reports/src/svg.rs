//! A small SVG writer: the few elements the charts need, with fixed-precision
//! coordinates so that the same chart always gives the same bytes. Text is left to the
//! viewer's fonts; nothing here needs a font at build or run time.

use std::fmt::Write as _;

use crate::format::xml;

/// Colours of one theme. Engine colours do not depend on the theme.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Theme {
    /// Page background.
    pub background: &'static str,
    /// Titles, labels and values.
    pub text: &'static str,
    /// Subtitles, notes and N/A rows.
    pub muted: &'static str,
    /// Grid lines.
    pub grid: &'static str,
    /// Axis lines and reference lines.
    pub axis: &'static str,
}

/// Dark text on white.
pub(crate) const LIGHT: Theme = Theme {
    background: "#ffffff",
    text: "#1f2328",
    muted: "#59636e",
    grid: "#d8dee4",
    axis: "#59636e",
};

/// Light text on GitHub's dark background.
pub(crate) const DARK: Theme = Theme {
    background: "#0d1117",
    text: "#e6edf3",
    muted: "#9198a1",
    grid: "#30363d",
    axis: "#9198a1",
};

/// Both themes, light first.
pub(crate) const THEMES: [Theme; 2] = [LIGHT, DARK];

/// Font stack: DejaVu Sans where present (the layout's width estimates assume it), else
/// Verdana, which has close metrics, else any sans-serif.
const FONTS: &str = "DejaVu Sans, Verdana, Geneva, sans-serif";

/// Horizontal anchoring of a text element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Anchor {
    /// Text starts at x.
    Start,
    /// Text is centred on x.
    Middle,
    /// Text ends at x.
    End,
}

/// Style of one text element.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TextStyle {
    /// Font size in px.
    pub size: f64,
    /// Bold weight.
    pub bold: bool,
    /// Italic.
    pub italic: bool,
    /// Fill colour.
    pub fill: &'static str,
    /// Anchoring.
    pub anchor: Anchor,
    /// A halo of this colour (the background) behind the glyphs, so grid and
    /// reference lines never run through the text.
    pub halo: Option<&'static str>,
}

impl TextStyle {
    /// Regular text of `size` px in `fill`, anchored at its start.
    pub(crate) fn new(size: f64, fill: &'static str) -> TextStyle {
        TextStyle {
            size,
            bold: false,
            italic: false,
            fill,
            anchor: Anchor::Start,
            halo: None,
        }
    }

    /// The same, with a halo of `background` behind the glyphs.
    pub(crate) fn halo(mut self, background: &'static str) -> TextStyle {
        self.halo = Some(background);
        self
    }

    /// The same, bold.
    pub(crate) fn bold(mut self) -> TextStyle {
        self.bold = true;
        self
    }

    /// The same, italic.
    pub(crate) fn italic(mut self) -> TextStyle {
        self.italic = true;
        self
    }

    /// The same, with another anchor.
    pub(crate) fn anchor(mut self, anchor: Anchor) -> TextStyle {
        self.anchor = anchor;
        self
    }
}

/// An SVG document being written.
pub(crate) struct Svg {
    out: String,
}

/// A coordinate or length with one decimal, "-0.0" normalised.
fn n(x: f64) -> String {
    let s = format!("{x:.1}");
    if s == "-0.0" {
        "0.0".to_string()
    } else {
        s
    }
}

impl Svg {
    /// Starts a `width` × `height` document on the theme's background, with an
    /// accessible title.
    pub(crate) fn new(width: f64, height: f64, title: &str, theme: &Theme) -> Svg {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" \
             viewBox=\"0 0 {w} {h}\" font-family=\"{FONTS}\" role=\"img\">",
            w = n(width),
            h = n(height),
        );
        let _ = writeln!(out, "<title>{}</title>", xml(title));
        let mut svg = Svg { out };
        svg.rect(0.0, 0.0, width, height, theme.background, None);
        svg
    }

    /// A filled rectangle, with an optional tooltip.
    pub(crate) fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str, tip: Option<&str>) {
        let _ = write!(
            self.out,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"",
            n(x),
            n(y),
            n(w.max(0.0)),
            n(h.max(0.0)),
            xml(fill)
        );
        match tip {
            Some(t) => {
                let _ = writeln!(self.out, "><title>{}</title></rect>", xml(t));
            }
            None => self.out.push_str("/>\n"),
        }
    }

    /// A rectangle drawn at `opacity`, with a tooltip.
    pub(crate) fn faded_rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str, tip: &str) {
        let _ = writeln!(
            self.out,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" fill-opacity=\"0.45\" \
             stroke=\"{}\" stroke-width=\"1\"><title>{}</title></rect>",
            n(x),
            n(y),
            n(w.max(0.0)),
            n(h.max(0.0)),
            xml(fill),
            xml(fill),
            xml(tip)
        );
    }

    /// A straight line; `dash` draws it dashed.
    pub(crate) fn line(
        &mut self,
        from: (f64, f64),
        to: (f64, f64),
        stroke: &str,
        width: f64,
        dash: bool,
    ) {
        let _ =
            writeln!(
            self.out,
            "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"{}\"{}/>",
            n(from.0),
            n(from.1),
            n(to.0),
            n(to.1),
            xml(stroke),
            n(width),
            if dash { " stroke-dasharray=\"5 4\"" } else { "" }
        );
    }

    /// A line through `points`, in order; `dash` draws it dashed.
    pub(crate) fn polyline(&mut self, points: &[(f64, f64)], stroke: &str, width: f64, dash: bool) {
        let pts: Vec<String> = points
            .iter()
            .map(|(x, y)| format!("{},{}", n(*x), n(*y)))
            .collect();
        let _ = writeln!(
            self.out,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{}\" \
             stroke-linejoin=\"round\"{}/>",
            pts.join(" "),
            xml(stroke),
            n(width),
            if dash {
                " stroke-dasharray=\"5 4\""
            } else {
                ""
            }
        );
    }

    /// A filled circle with a ring of `ring` (the background, so that crossing lines
    /// stay apart), with an optional tooltip.
    pub(crate) fn circle(
        &mut self,
        centre: (f64, f64),
        r: f64,
        fill: &str,
        ring: &str,
        tip: Option<&str>,
    ) {
        let _ = write!(
            self.out,
            "<circle cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"{}\" stroke=\"{}\" stroke-width=\"1.5\"",
            n(centre.0),
            n(centre.1),
            n(r),
            xml(fill),
            xml(ring)
        );
        match tip {
            Some(t) => {
                let _ = writeln!(self.out, "><title>{}</title></circle>", xml(t));
            }
            None => self.out.push_str("/>\n"),
        }
    }

    /// A filled polygon.
    pub(crate) fn polygon(&mut self, points: &[(f64, f64)], fill: &str) {
        let pts: Vec<String> = points
            .iter()
            .map(|(x, y)| format!("{},{}", n(*x), n(*y)))
            .collect();
        let _ = writeln!(
            self.out,
            "<polygon points=\"{}\" fill=\"{}\"/>",
            pts.join(" "),
            xml(fill)
        );
    }

    /// A line of text with its baseline at `y`.
    pub(crate) fn text(&mut self, x: f64, y: f64, style: TextStyle, content: &str) {
        let anchor = match style.anchor {
            Anchor::Start => "",
            Anchor::Middle => " text-anchor=\"middle\"",
            Anchor::End => " text-anchor=\"end\"",
        };
        let halo = match style.halo {
            Some(bg) => format!(
                " stroke=\"{}\" stroke-width=\"3\" stroke-linejoin=\"round\" paint-order=\"stroke\"",
                xml(bg)
            ),
            None => String::new(),
        };
        let _ = writeln!(
            self.out,
            "<text x=\"{}\" y=\"{}\" font-size=\"{}\" fill=\"{}\"{}{}{}{}>{}</text>",
            n(x),
            n(y),
            n(style.size),
            xml(style.fill),
            anchor,
            halo,
            if style.bold {
                " font-weight=\"bold\""
            } else {
                ""
            },
            if style.italic {
                " font-style=\"italic\""
            } else {
                ""
            },
            xml(content)
        );
    }

    /// Closes the document.
    pub(crate) fn finish(mut self) -> String {
        self.out.push_str("</svg>\n");
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestResult;

    #[test]
    fn writes_escaped_fixed_precision_elements() -> TestResult {
        let mut s = Svg::new(100.0, 50.0, "a <title>", &LIGHT);
        s.text(1.25, 2.0, TextStyle::new(12.0, "#000").bold(), "x & y");
        s.line((0.0, -0.01), (3.0, 4.0), "#111", 1.0, true);
        s.polygon(&[(0.0, 0.0), (1.0, 1.0)], "#222");
        s.polyline(&[(1.0, 2.0), (3.0, 4.0)], "#333", 2.0, false);
        s.circle((5.0, 6.0), 4.0, "#444", "#fff", Some("a & b"));
        let out = s.finish();
        assert!(out.contains("<polyline points=\"1.0,2.0 3.0,4.0\" fill=\"none\""));
        assert!(out.contains("<circle cx=\"5.0\" cy=\"6.0\" r=\"4.0\" fill=\"#444\""));
        assert!(out.contains("<title>a &amp; b</title></circle>"));
        assert!(out.contains("<title>a &lt;title&gt;</title>"));
        assert!(out.contains("x &amp; y"));
        assert!(out.contains("y1=\"0.0\""));
        assert!(out.contains("font-weight=\"bold\""));
        assert!(out.ends_with("</svg>\n"));
        Ok(())
    }
}
