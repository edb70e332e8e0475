//! A line chart on logarithmic axes: one line per engine through its measured points,
//! each point marked (with a tooltip of its value), a legend beside the plot, and
//! dashed horizontal reference lines (the device's floor) labelled with their values.
//! Labels of the ticks, the legend and the reference lines never overlap one another.

use crate::format::{self, fit_text, text_width, wrap};
use crate::log_axis::LogAxis;
use crate::svg::{Anchor, Svg, TextStyle, Theme};

const WIDTH: f64 = 960.0;
const PAD: f64 = 16.0;
const TITLE_SIZE: f64 = 17.0;
const SUB_SIZE: f64 = 12.0;
const LABEL_SIZE: f64 = 12.0;
const TICK_SIZE: f64 = 11.0;
const NOTE_SIZE: f64 = 11.0;
const LINE_H: f64 = 17.0;
const PLOT_H: f64 = 320.0;
const LEGEND_ROW: f64 = 20.0;
const MARK_R: f64 = 4.0;
const MIN_LEGEND: f64 = 80.0;
const MAX_LEGEND: f64 = 220.0;

/// What the horizontal axis counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum XKind {
    /// Keys in the data set, on decades.
    Keys,
    /// Threads, on powers of two.
    Threads,
}

impl XKind {
    fn axis(self, values: &[f64]) -> Option<LogAxis> {
        match self {
            // The measured sizes are ticks too, so each point's size can be read.
            XKind::Keys => LogAxis::decades(values).map(|a| a.with_extra_ticks(values)),
            XKind::Threads => LogAxis::powers_of_two(values),
        }
    }

    fn tick(self, v: f64) -> String {
        match self {
            XKind::Keys => format::count_tick(v),
            XKind::Threads => format::trim_num(v, 2),
        }
    }

    fn scale(self) -> &'static str {
        match self {
            XKind::Keys => "log scale",
            XKind::Threads => "log₂ scale",
        }
    }
}

/// What the vertical axis measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum YKind {
    /// Nanoseconds per operation.
    Time,
    /// Operations per second.
    Rate,
}

impl YKind {
    fn tick(self, v: f64) -> String {
        match self {
            YKind::Time => format::duration_log_tick(v),
            YKind::Rate => format::rate_tick(v),
        }
    }
}

/// One measured point of a line.
#[derive(Debug, Clone)]
pub(crate) struct Point {
    /// Position on the horizontal axis.
    pub x: f64,
    /// The value.
    pub y: f64,
    /// Tooltip: what the point is and its value.
    pub tip: String,
}

/// One line: an engine's points.
#[derive(Debug, Clone)]
pub(crate) struct Series {
    /// Legend text.
    pub label: String,
    /// Line and mark colour.
    pub colour: &'static str,
    /// The points, in any order (drawn by `x`).
    pub points: Vec<Point>,
}

/// A dashed horizontal reference line.
#[derive(Debug, Clone)]
pub(crate) struct Floor {
    /// Where the line is, on the vertical axis.
    pub value: f64,
    /// The text beside it, with its value.
    pub label: String,
}

/// A whole line chart, independent of theme.
#[derive(Debug, Clone)]
pub(crate) struct LineChart {
    /// File stem: `<stem>-light.svg`, `<stem>-dark.svg`.
    pub stem: String,
    /// Title line.
    pub title: String,
    /// Lines under the title (wrapped if too long).
    pub subtitle: Vec<String>,
    /// What the horizontal axis counts.
    pub x: XKind,
    /// Horizontal axis title (the scale is added).
    pub x_title: String,
    /// What the vertical axis measures.
    pub y: YKind,
    /// Vertical axis title (the scale and `better` are added).
    pub y_title: String,
    /// Which way is better, e.g. "lower is better".
    pub better: String,
    /// The lines, in legend order.
    pub series: Vec<Series>,
    /// Reference lines.
    pub floors: Vec<Floor>,
    /// Notes under the axis.
    pub footnotes: Vec<String>,
}

/// Where the plot is on the canvas.
#[derive(Debug, Clone, Copy)]
struct Frame {
    left: f64,
    right: f64,
    top: f64,
    bottom: f64,
}

impl LineChart {
    /// The vertical axis: every point and every reference line.
    pub(crate) fn y_axis(&self) -> Option<LogAxis> {
        let mut values: Vec<f64> = self.points().map(|p| p.y).collect();
        if values.is_empty() {
            return None;
        }
        values.extend(self.floors.iter().map(|f| f.value));
        LogAxis::decades(&values)
    }

    /// The horizontal axis: every point.
    pub(crate) fn x_axis(&self) -> Option<LogAxis> {
        let values: Vec<f64> = self.points().map(|p| p.x).collect();
        self.x.axis(&values)
    }

    fn points(&self) -> impl Iterator<Item = &Point> {
        self.series
            .iter()
            .flat_map(|s| s.points.iter())
            .filter(|p| p.x.is_finite() && p.x > 0.0 && p.y.is_finite() && p.y > 0.0)
    }

    /// Renders the chart in one theme.
    pub(crate) fn render(&self, theme: &Theme) -> String {
        let inner = WIDTH - 2.0 * PAD;
        let axes = self.x_axis().zip(self.y_axis());
        let subtitle: Vec<String> = self
            .subtitle
            .iter()
            .flat_map(|l| wrap(l, SUB_SIZE, false, inner))
            .collect();
        let y_title_at = 30.0 + LINE_H * (subtitle.len() as f64 + 1.0) + 14.0;
        let top = y_title_at + 16.0;
        let bottom = top + PLOT_H;
        let y_labels: Vec<(f64, String)> = axes
            .as_ref()
            .map(|(_, y)| y.ticks.iter().map(|t| (*t, self.y.tick(*t))).collect())
            .unwrap_or_default();
        let y_label_w = y_labels
            .iter()
            .map(|(_, l)| text_width(l, TICK_SIZE, false))
            .fold(30.0, f64::max);
        let legend_w = self
            .series
            .iter()
            .map(|s| text_width(&s.label, LABEL_SIZE, false) + 28.0)
            .fold(MIN_LEGEND, f64::max)
            .min(MAX_LEGEND);
        let left = PAD + y_label_w + 8.0;
        let right = WIDTH - PAD - legend_w - 16.0;
        let frame = Frame {
            left,
            right,
            top,
            bottom,
        };
        let notes: Vec<String> = self
            .footnotes
            .iter()
            .flat_map(|f| wrap(f, NOTE_SIZE, false, inner))
            .collect();
        let height = bottom + 46.0 + 16.0 * notes.len() as f64 + 8.0;

        let mut svg = Svg::new(WIDTH, height, &self.title, theme);
        let title = fit_text(&self.title, TITLE_SIZE, true, inner);
        let bold = TextStyle::new(TITLE_SIZE, theme.text).bold();
        svg.text(PAD, 30.0, bold, &title);
        for (i, line) in subtitle.iter().enumerate() {
            let y = 30.0 + LINE_H * (i as f64 + 1.0) + 2.0;
            svg.text(PAD, y, TextStyle::new(SUB_SIZE, theme.muted), line);
        }
        let y_title = format!("{}, log scale ({})", self.y_title, self.better);
        let y_title = fit_text(&y_title, SUB_SIZE, false, WIDTH - PAD - left);
        svg.text(
            left,
            y_title_at,
            TextStyle::new(SUB_SIZE, theme.text),
            &y_title,
        );
        let x_title = format!("{}, {}", self.x_title, self.x.scale());
        let x_title = fit_text(&x_title, SUB_SIZE, false, inner);
        let style = TextStyle::new(SUB_SIZE, theme.text).anchor(Anchor::Middle);
        let centre = ((left + right) / 2.0).max(PAD + text_width(&x_title, SUB_SIZE, false) / 2.0);
        svg.text(centre, bottom + 38.0, style, &x_title);
        for (i, n) in notes.iter().enumerate() {
            let y = bottom + 60.0 + 16.0 * i as f64;
            svg.text(PAD, y, TextStyle::new(NOTE_SIZE, theme.muted), n);
        }

        match axes {
            Some((x_axis, y_axis)) => {
                self.draw_plot(&mut svg, theme, frame, &x_axis, &y_axis, &y_labels)
            }
            None => {
                svg.line((left, bottom), (right, bottom), theme.axis, 1.0, false);
                svg.line((left, top), (left, bottom), theme.axis, 1.0, false);
                let style = TextStyle::new(LABEL_SIZE, theme.muted).italic();
                let text = "no measurements in this results file";
                svg.text(left + 8.0, top + 20.0, style, text);
            }
        }
        self.draw_legend(&mut svg, theme, right + 16.0, top);
        svg.finish()
    }

    fn draw_plot(
        &self,
        svg: &mut Svg,
        theme: &Theme,
        Frame {
            left,
            right,
            top,
            bottom,
        }: Frame,
        x_axis: &LogAxis,
        y_axis: &LogAxis,
        y_labels: &[(f64, String)],
    ) {
        let x_of = |v: f64| left + x_axis.position(v) * (right - left);
        let y_of = |v: f64| bottom - y_axis.position(v) * (bottom - top);
        // Grid, ticks and axes.
        let mut last_label_y = f64::INFINITY;
        for (t, label) in y_labels {
            let y = y_of(*t);
            svg.line((left, y), (right, y), theme.grid, 1.0, false);
            if last_label_y - y >= TICK_SIZE + 2.0 {
                let style = TextStyle::new(TICK_SIZE, theme.muted).anchor(Anchor::End);
                svg.text(left - 8.0, y + 4.0, style, label);
                last_label_y = y;
            }
        }
        let mut last_tick_end = f64::NEG_INFINITY;
        for &t in &x_axis.ticks {
            let x = x_of(t);
            svg.line((x, top), (x, bottom), theme.grid, 1.0, false);
            let label = self.x.tick(t);
            let half = text_width(&label, TICK_SIZE, false) / 2.0;
            if x - half > last_tick_end + 6.0 && x + half <= WIDTH - PAD {
                let style = TextStyle::new(TICK_SIZE, theme.muted).anchor(Anchor::Middle);
                svg.text(x, bottom + 18.0, style, &label);
                last_tick_end = x + half;
            }
        }
        svg.line((left, bottom), (right, bottom), theme.axis, 1.0, false);
        svg.line((left, top), (left, bottom), theme.axis, 1.0, false);

        // Reference lines under the data, their labels over it.
        let mut floors: Vec<&Floor> = self.floors.iter().collect();
        floors.sort_by(|a, b| b.value.total_cmp(&a.value));
        for f in &floors {
            let y = y_of(f.value);
            svg.line((left, y), (right, y), theme.axis, 1.5, true);
        }

        // The lines, then their marks on top.
        let mut ends: Vec<(f64, f64)> = Vec::new();
        for s in &self.series {
            let mut points: Vec<&Point> = s.points.iter().collect();
            points.retain(|p| p.x.is_finite() && p.x > 0.0 && p.y.is_finite() && p.y > 0.0);
            points.sort_by(|a, b| a.x.total_cmp(&b.x));
            if let (Some(first), Some(last)) = (points.first(), points.last()) {
                ends.push((y_of(first.y), y_of(last.y)));
            }
            if points.len() > 1 {
                let line: Vec<(f64, f64)> = points.iter().map(|p| (x_of(p.x), y_of(p.y))).collect();
                svg.polyline(&line, s.colour, 2.0, false);
            }
            for p in points {
                svg.circle(
                    (x_of(p.x), y_of(p.y)),
                    MARK_R,
                    s.colour,
                    theme.background,
                    Some(&p.tip),
                );
            }
        }

        // Each label above its line (below when above would leave the plot or meet the
        // previous label), at the end of the plot where the lines pass farthest from it.
        let mut placed: Vec<f64> = Vec::new();
        for f in floors {
            let y = y_of(f.value);
            let clear = |b: f64| placed.iter().all(|p| (p - b).abs() >= TICK_SIZE + 3.0);
            let above = y - 5.0;
            let baseline = if above >= top + TICK_SIZE && clear(above) {
                above
            } else {
                y + TICK_SIZE + 3.0
            };
            placed.push(baseline);
            let middle = baseline - TICK_SIZE * 0.35;
            let room = |end: fn(&(f64, f64)) -> f64| {
                ends.iter()
                    .map(|e| (end(e) - middle).abs())
                    .fold(f64::INFINITY, f64::min)
            };
            let text = fit_text(&f.label, TICK_SIZE, false, right - left - 8.0);
            let style = TextStyle::new(TICK_SIZE, theme.text).halo(theme.background);
            if room(|e| e.0) > room(|e| e.1) {
                svg.text(left + 6.0, baseline, style, &text);
            } else {
                svg.text(right - 4.0, baseline, style.anchor(Anchor::End), &text);
            }
        }
    }

    fn draw_legend(&self, svg: &mut Svg, theme: &Theme, x: f64, top: f64) {
        let width = WIDTH - PAD - x - 24.0;
        for (i, s) in self.series.iter().enumerate() {
            let mid = top + 10.0 + LEGEND_ROW * i as f64;
            let measured = !s.points.is_empty();
            if measured {
                svg.line((x, mid), (x + 18.0, mid), s.colour, 2.0, false);
                svg.circle((x + 9.0, mid), MARK_R, s.colour, theme.background, None);
            }
            let text = fit_text(&s.label, LABEL_SIZE, false, width);
            let style = if measured {
                TextStyle::new(LABEL_SIZE, theme.text)
            } else {
                TextStyle::new(LABEL_SIZE, theme.muted).italic()
            };
            svg.text(x + 24.0, mid + 4.0, style, &text);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::svg::{DARK, LIGHT};
    use crate::testing::{assert_contains_all, TestResult};

    fn chart(floors: Vec<Floor>) -> LineChart {
        let series = |label: &str, colour: &'static str, f: f64| Series {
            label: label.into(),
            colour,
            points: [1e5, 1e6, 1e7, 5e7]
                .iter()
                .map(|&x| Point {
                    x,
                    y: f * x.log10(),
                    tip: format!("{label} at {x}"),
                })
                .collect(),
        };
        LineChart {
            stem: "t".into(),
            title: "Title".into(),
            subtitle: vec!["scale ci".into()],
            x: XKind::Keys,
            x_title: "keys".into(),
            y: YKind::Time,
            y_title: "mean time per operation".into(),
            better: "lower is better".into(),
            series: vec![
                series("aimeta", "#f28e2b", 1_000.0),
                series("lmdb", "#b07aa1", 3_000.0),
                Series {
                    label: "postgres".into(),
                    colour: "#76b7b2",
                    points: vec![],
                },
            ],
            floors,
            footnotes: vec!["a note".into()],
        }
    }

    #[test]
    fn lines_marks_ticks_and_legend() -> TestResult {
        let svg = chart(vec![]).render(&LIGHT);
        let needles = [
            ">10⁵</text>",
            ">1 M</text>",
            ">10 M</text>",
            ">50 M</text>",
            "<title>aimeta at 100000</title></circle>",
            "<polyline points=",
            "stroke=\"#b07aa1\"",
            ">aimeta</text>",
            "font-style=\"italic\">postgres</text>",
            ">mean time per operation, log scale (lower is better)</text>",
            ">keys, log scale</text>",
        ];
        assert_contains_all(&svg, &needles);
        assert_eq!(
            svg.matches("<polyline").count(),
            2,
            "no line without points"
        );
        assert_eq!(svg.matches("</circle>").count(), 8, "a mark per point");
        assert!(
            !svg.contains("stroke-dasharray"),
            "no floor, no dashed line"
        );
        Ok(())
    }

    #[test]
    fn a_floor_is_a_dashed_line_inside_the_axis() -> TestResult {
        let floor = Floor {
            value: 61_000.0,
            label: "disk: 4 KiB read at QD1, 61.0 µs".into(),
        };
        let c = chart(vec![floor]);
        let y = c.y_axis().ok_or("no axis")?;
        assert!(y.hi >= 61_000.0, "{y:?}");
        let svg = c.render(&DARK);
        assert_contains_all(
            &svg,
            &[
                "stroke-dasharray",
                ">disk: 4 KiB read at QD1, 61.0 µs</text>",
            ],
        );
        assert!(svg.contains("#0d1117"));
        Ok(())
    }

    #[test]
    fn no_points_says_so() -> TestResult {
        let mut c = chart(vec![]);
        c.series.iter_mut().for_each(|s| s.points.clear());
        assert!(c
            .render(&LIGHT)
            .contains("no measurements in this results file"));
        Ok(())
    }
}
