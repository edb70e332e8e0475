//! A horizontal bar chart: rows of labelled bars grouped in sections, one shared value
//! axis (linear, linear with a break, or log), each bar's value printed beside it, and an
//! optional reference line. Row labels sit in a left column and values in a right
//! column sized from their text, so no text overlaps a bar or another text.

use crate::axis::{self, Axis, Scale, BREAK_AT_SHARE};
pub(crate) use crate::axis::{Reference, ValueAxis, ValueKind};
use crate::format::{self, fit_text, split_label, text_width, wrap};
use crate::svg::{Anchor, Svg, TextStyle, Theme};

const WIDTH: f64 = 960.0;
const PAD: f64 = 16.0;
const TITLE_SIZE: f64 = 17.0;
const SUB_SIZE: f64 = 12.0;
const LABEL_SIZE: f64 = 12.0;
const VALUE_SIZE: f64 = 11.5;
const TICK_SIZE: f64 = 11.0;
const NOTE_SIZE: f64 = 11.0;
const HEADER_H: f64 = 28.0;
const ROW_H: f64 = 24.0;
/// Height of a row whose label takes two lines.
const ROW_H2: f64 = 36.0;
const BAR_H: f64 = 14.0;
const LINE_H: f64 = 17.0;
const MAX_LABEL_COL: f64 = 280.0;
const MAX_VALUE_COL: f64 = 300.0;
const MIN_VALUE_COL: f64 = 40.0;

/// A row's content.
#[derive(Debug, Clone)]
pub(crate) enum Cell {
    /// A measured value.
    Value(f64),
    /// No value; the text says why.
    Missing(String),
}

/// A larger value of the same row (a tail percentile), drawn as a lighter bar behind the
/// row's own and printed after its value with its name.
#[derive(Debug, Clone)]
pub(crate) struct Tail {
    /// What the value is, e.g. "p99".
    pub name: &'static str,
    /// The value.
    pub value: f64,
}

/// One bar.
#[derive(Debug, Clone)]
pub(crate) struct Row {
    /// Text left of the bar.
    pub label: String,
    /// Bar colour.
    pub colour: &'static str,
    /// Drawn lighter (for example: the data set fits the budget).
    pub faded: bool,
    /// Value or reason for none.
    pub cell: Cell,
    /// Extra text after the value.
    pub annotation: Option<String>,
    /// Tooltip prefix: what the bar is.
    pub what: String,
    /// Larger values drawn lighter behind the bar (only with a `Cell::Value`).
    pub tails: Vec<Tail>,
}

impl Row {
    /// The row's value and its tails' values.
    fn extents(&self) -> Vec<f64> {
        match self.cell {
            Cell::Value(v) => std::iter::once(v)
                .chain(self.tails.iter().map(|t| t.value))
                .collect(),
            Cell::Missing(_) => Vec::new(),
        }
    }

    /// The largest of the row's value and its tails, when it has a value.
    fn extent(&self) -> Option<f64> {
        self.extents()
            .into_iter()
            .filter(|v| v.is_finite())
            .reduce(f64::max)
    }
}

/// Rows under an optional heading.
#[derive(Debug, Clone)]
pub(crate) struct Section {
    /// Heading above the rows.
    pub header: Option<String>,
    /// The bars.
    pub rows: Vec<Row>,
}

/// A whole chart, independent of theme.
#[derive(Debug, Clone)]
pub(crate) struct Chart {
    /// File stem: `<stem>-light.svg`, `<stem>-dark.svg`.
    pub stem: String,
    /// Title line.
    pub title: String,
    /// Lines under the title (wrapped if too long).
    pub subtitle: Vec<String>,
    /// The value axis.
    pub value_axis: ValueAxis,
    /// The bars.
    pub sections: Vec<Section>,
    /// Notes under the axis.
    pub footnotes: Vec<String>,
}

impl Chart {
    /// A chart named `stem` (its files are `<stem>-light.svg` and `<stem>-dark.svg`).
    pub(crate) fn new(
        stem: &str,
        title: String,
        subtitle: Vec<String>,
        value_axis: ValueAxis,
        sections: Vec<Section>,
        footnotes: Vec<String>,
    ) -> Chart {
        Chart {
            stem: stem.to_string(),
            title,
            subtitle,
            value_axis,
            sections,
            footnotes,
        }
    }

    fn values(&self) -> Vec<f64> {
        self.rows().flat_map(Row::extents).collect()
    }

    fn rows(&self) -> impl Iterator<Item = &Row> {
        self.sections.iter().flat_map(|s| s.rows.iter())
    }

    /// The axis this chart is drawn on.
    pub(crate) fn axis(&self) -> Axis {
        let v = &self.value_axis;
        match v.kind {
            ValueKind::Share => axis::share(),
            ValueKind::Time | ValueKind::Ratio => {
                axis::plan(&self.values(), v.force_log, &v.include)
            }
        }
    }

    fn format_value(&self, v: f64) -> String {
        match self.value_axis.kind {
            ValueKind::Time => format::duration(v),
            ValueKind::Ratio => format::ratio(v),
            ValueKind::Share => format::percent(v),
        }
    }

    fn tick_label(&self, axis: &Axis, t: f64) -> String {
        match (self.value_axis.kind, axis.scale) {
            (ValueKind::Ratio, _) => format::ratio_tick(t),
            (ValueKind::Share, _) => format::percent_tick(t),
            (ValueKind::Time, Scale::Log) => format::duration_log_tick(t),
            (ValueKind::Time, Scale::Linear) => format::duration_tick(t, axis.hi),
        }
    }

    /// The text printed beside a row's bar.
    fn value_label(&self, row: &Row, axis: &Axis) -> Option<String> {
        let Cell::Value(v) = row.cell else {
            return None;
        };
        let mut s = self.format_value(v);
        for t in &row.tails {
            s.push_str(&format!(" · {} {}", t.name, self.format_value(t.value)));
        }
        if row.extent().is_some_and(|e| axis.position(e).1) {
            s.push_str(" (bar cut)");
        }
        if let Some(a) = &row.annotation {
            s.push_str(" · ");
            s.push_str(a);
        }
        Some(s)
    }

    /// The full axis title, saying when the scale is logarithmic.
    pub(crate) fn full_axis_title(&self, axis: &Axis) -> String {
        let ValueAxis { title, better, .. } = &self.value_axis;
        match axis.scale {
            Scale::Log => format!("{}, log scale ({})", title, better),
            Scale::Linear => match self.value_axis.kind {
                ValueKind::Time => {
                    let unit = format::time_unit(axis.hi).1;
                    format!("{} in {unit} ({})", title, better)
                }
                ValueKind::Ratio | ValueKind::Share => format!("{} ({})", title, better),
            },
        }
    }

    /// Renders the chart in one theme.
    pub(crate) fn render(&self, theme: &Theme) -> String {
        let axis = self.axis();
        let inner = WIDTH - 2.0 * PAD;
        let label_col = self
            .rows()
            .map(|r| text_width(&r.label, LABEL_SIZE, false))
            .fold(60.0, f64::max)
            .min(MAX_LABEL_COL);
        let left = PAD + label_col + 10.0;
        // The widest plot that leaves every value label room after its bar's end.
        let avail = WIDTH - PAD - left;
        let plot_w = self
            .rows()
            .filter_map(|r| Some((axis.position(r.extent()?).0, self.value_label(r, &axis)?)))
            .filter(|(share, _)| *share > 0.0)
            .map(|(share, label)| (avail - 8.0 - text_width(&label, VALUE_SIZE, false)) / share)
            .fold(avail - MIN_VALUE_COL, f64::min)
            .max(avail - MAX_VALUE_COL);
        let right = left + plot_w;
        let x_of = |v: f64| left + axis.position(v).0 * plot_w;

        let subtitle: Vec<String> = self
            .subtitle
            .iter()
            .flat_map(|l| wrap(l, SUB_SIZE, false, inner))
            .collect();
        let mut top = 30.0 + LINE_H * subtitle.len() as f64 + 16.0;
        if self.value_axis.reference.is_some() {
            top += LINE_H;
        }
        let label_lines = |r: &Row| split_label(&r.label, LABEL_SIZE, label_col);
        let row_h = |r: &Row| {
            if label_lines(r).len() > 1 {
                ROW_H2
            } else {
                ROW_H
            }
        };
        let rows_h: f64 = self
            .sections
            .iter()
            .map(|s| {
                s.rows.iter().map(row_h).sum::<f64>()
                    + if s.header.is_some() { HEADER_H } else { 0.0 }
            })
            .sum();
        let bottom = top + rows_h.max(ROW_H) + 4.0;
        let mut notes: Vec<String> = Vec::new();
        if axis.cut {
            notes.push(
                "// marks an axis break: a bar past it is cut short, and its printed value is exact."
                    .to_string(),
            );
        }
        for f in &self.footnotes {
            notes.extend(wrap(f, NOTE_SIZE, false, inner));
        }
        let height = bottom + 46.0 + 16.0 * notes.len() as f64 + 8.0;

        let mut svg = Svg::new(WIDTH, height, &self.title, theme);
        let title = fit_text(&self.title, TITLE_SIZE, true, inner);
        svg.text(
            PAD,
            30.0,
            TextStyle::new(TITLE_SIZE, theme.text).bold(),
            &title,
        );
        for (i, line) in subtitle.iter().enumerate() {
            let y = 30.0 + LINE_H * (i as f64 + 1.0) + 2.0;
            svg.text(PAD, y, TextStyle::new(SUB_SIZE, theme.muted), line);
        }

        // Grid and ticks.
        let mut last_tick_end = f64::NEG_INFINITY;
        for &t in &axis.ticks {
            let x = x_of(t);
            svg.line((x, top - 4.0), (x, bottom), theme.grid, 1.0, false);
            let label = self.tick_label(&axis, t);
            let half = text_width(&label, TICK_SIZE, false) / 2.0;
            if x - half > last_tick_end + 6.0 && x + half <= WIDTH - PAD {
                let style = TextStyle::new(TICK_SIZE, theme.muted).anchor(Anchor::Middle);
                svg.text(x, bottom + 18.0, style, &label);
                last_tick_end = x + half;
            }
        }
        svg.line((left, bottom), (right, bottom), theme.axis, 1.0, false);
        if axis.cut {
            break_glyph(
                &mut svg,
                theme,
                left + BREAK_AT_SHARE * plot_w,
                bottom - 6.0,
                12.0,
            );
        }
        let axis_title = fit_text(&self.full_axis_title(&axis), SUB_SIZE, false, inner);
        let style = TextStyle::new(SUB_SIZE, theme.text).anchor(Anchor::Middle);
        let centre =
            ((left + right) / 2.0).max(PAD + text_width(&axis_title, SUB_SIZE, false) / 2.0);
        svg.text(centre, bottom + 38.0, style, &axis_title);
        for (i, n) in notes.iter().enumerate() {
            let y = bottom + 60.0 + 16.0 * i as f64;
            svg.text(PAD, y, TextStyle::new(NOTE_SIZE, theme.muted), n);
        }

        if let Some(r) = &self.value_axis.reference {
            let x = x_of(r.value);
            svg.line((x, top - 8.0), (x, bottom), theme.axis, 1.5, true);
            let cap = top - 12.0;
            let l = fit_text(&r.left, SUB_SIZE, false, x - PAD - 6.0);
            let rr = fit_text(&r.right, SUB_SIZE, false, WIDTH - PAD - x - 6.0);
            let style = TextStyle::new(SUB_SIZE, theme.text);
            svg.text(x - 6.0, cap, style.anchor(Anchor::End), &l);
            svg.text(x + 6.0, cap, style, &rr);
        }
        // Bars.
        let mut y = top;
        if self.sections.iter().all(|s| s.rows.is_empty()) {
            let style = TextStyle::new(LABEL_SIZE, theme.muted).italic();
            svg.text(
                left,
                y + 16.0,
                style,
                "no measurements in this results file",
            );
        }
        for section in &self.sections {
            if let Some(h) = &section.header {
                let h = fit_text(h, LABEL_SIZE, true, inner);
                svg.text(
                    PAD,
                    y + 19.0,
                    TextStyle::new(LABEL_SIZE, theme.text).bold(),
                    &h,
                );
                y += HEADER_H;
            }
            for row in &section.rows {
                let h = row_h(row);
                let slot = Slot { y, h, left, right };
                self.draw_row(&mut svg, theme, &axis, row, &label_lines(row), slot);
                y += h;
            }
        }

        svg.finish()
    }

    fn draw_row(
        &self,
        svg: &mut Svg,
        theme: &Theme,
        axis: &Axis,
        row: &Row,
        label: &[String],
        Slot { y, h, left, right }: Slot,
    ) {
        let mid = y + h / 2.0;
        // Baseline of one line of 12 px text centred on the row.
        let base = mid + 4.0;
        let style = TextStyle::new(LABEL_SIZE, theme.text).anchor(Anchor::End);
        let first = base - 7.0 * (label.len() as f64 - 1.0);
        for (i, line) in label.iter().enumerate() {
            svg.text(left - 10.0, first + 14.0 * i as f64, style, line);
        }
        let bar_y = mid - BAR_H / 2.0;
        match &row.cell {
            Cell::Missing(why) => {
                let text = fit_text(why, LABEL_SIZE, false, WIDTH - PAD - left - 4.0);
                let style = TextStyle::new(LABEL_SIZE, theme.muted)
                    .italic()
                    .halo(theme.background);
                svg.text(left + 4.0, base, style, &text);
            }
            Cell::Value(v) => {
                let plot_w = right - left;
                let width = |v: f64| {
                    let w = axis.position(v).0 * plot_w;
                    if v > 0.0 {
                        w.max(1.5)
                    } else {
                        w
                    }
                };
                // Longest tail first, so each shorter bar is drawn over the longer ones.
                let mut tails: Vec<&Tail> = row.tails.iter().collect();
                tails.sort_by(|a, b| b.value.total_cmp(&a.value));
                for t in tails {
                    let tip = format!("{} {}: {}", row.what, t.name, self.format_value(t.value));
                    svg.faded_rect(left, bar_y, width(t.value), BAR_H, row.colour, &tip);
                }
                let w = width(*v);
                let tip = format!("{}: {}", row.what, self.format_value(*v));
                if row.faded {
                    svg.faded_rect(left, bar_y, w, BAR_H, row.colour, &tip);
                } else {
                    svg.rect(left, bar_y, w, BAR_H, row.colour, Some(&tip));
                }
                let extent = row.extent().unwrap_or(*v);
                let (cut, w) = (axis.position(extent).1, width(extent).max(w));
                if cut {
                    break_glyph(
                        svg,
                        theme,
                        left + BREAK_AT_SHARE * plot_w,
                        bar_y - 3.0,
                        BAR_H + 6.0,
                    );
                }
                if let Some(text) = self.value_label(row, axis) {
                    let text = fit_text(&text, VALUE_SIZE, false, WIDTH - PAD - (left + w + 6.0));
                    let style = TextStyle::new(VALUE_SIZE, theme.text).halo(theme.background);
                    svg.text(left + w + 6.0, base, style, &text);
                }
            }
        }
    }
}

/// Where a row is drawn: its top and height, and the plot's left and right edges.
#[derive(Debug, Clone, Copy)]
struct Slot {
    y: f64,
    h: f64,
    left: f64,
    right: f64,
}

/// The axis-break mark: a slanted gap of background colour between two slanted lines,
/// `h` tall from `top`, centred on `x`.
fn break_glyph(svg: &mut Svg, theme: &Theme, x: f64, top: f64, h: f64) {
    let (lean, gap) = (4.0, 4.0);
    let bot = top + h;
    svg.polygon(
        &[
            (x - gap / 2.0 - lean, bot),
            (x - gap / 2.0 + lean, top),
            (x + gap / 2.0 + lean, top),
            (x + gap / 2.0 - lean, bot),
        ],
        theme.background,
    );
    for dx in [-gap / 2.0, gap / 2.0] {
        svg.line(
            (x + dx - lean, bot),
            (x + dx + lean, top),
            theme.axis,
            1.2,
            false,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::svg::{DARK, LIGHT};
    use crate::testing::{assert_contains_all, TestResult};

    fn row(label: &str, cell: Cell) -> Row {
        Row {
            label: label.into(),
            colour: "#f28e2b",
            faded: false,
            cell,
            annotation: None,
            what: label.into(),
            tails: vec![],
        }
    }

    fn chart(values: &[f64]) -> Chart {
        let rows = values
            .iter()
            .enumerate()
            .map(|(i, v)| row(&format!("engine{i}"), Cell::Value(*v)))
            .chain(std::iter::once(row(
                "x",
                Cell::Missing("N/A: unsupported".into()),
            )))
            .collect();
        let section = Section {
            header: Some("manifest_fits".into()),
            rows,
        };
        let (subtitle, footnotes) = (vec!["scale ci".into()], vec!["a note".into()]);
        let value_axis = ValueAxis::times("mean time per operation");
        Chart::new(
            "t",
            "Title".into(),
            subtitle,
            value_axis,
            vec![section],
            footnotes,
        )
    }

    #[test]
    fn an_outlier_is_cut_and_labelled_with_its_true_value() -> TestResult {
        let c = chart(&[1200.0, 1500.0, 900.0, 250_000.0]);
        let needles = [
            "250 µs (bar cut)",
            "axis break",
            "<polygon",
            "N/A: unsupported",
            "mean time per operation in µs (lower is better)</text>",
        ];
        assert_contains_all(&c.render(&LIGHT), &needles);
        Ok(())
    }

    #[test]
    fn a_wide_spread_says_log_scale_on_the_axis() -> TestResult {
        let c = chart(&[100.0, 90_000.0, 200_000.0]);
        assert!(c
            .render(&DARK)
            .contains("mean time per operation, log scale (lower is better)"));
        assert!(c.render(&DARK).contains("#0d1117"));
        Ok(())
    }

    #[test]
    fn tails_are_drawn_behind_and_printed_after_the_value() -> TestResult {
        let mut c = chart(&[1000.0, 2000.0]);
        c.sections[0].rows[0].tails = vec![
            Tail {
                name: "p99",
                value: 3000.0,
            },
            Tail {
                name: "p99.9",
                value: 4000.0,
            },
        ];
        let svg = c.render(&LIGHT);
        let needles = [
            ">1.00 µs · p99 3.00 µs · p99.9 4.00 µs</text>",
            "<title>engine0 p99.9: 4.00 µs</title>",
            "<title>engine0 p99: 3.00 µs</title>",
        ];
        assert_contains_all(&svg, &needles);
        // The longest tail comes first, so the shorter bars are drawn over it.
        let at = |n: &str| svg.find(n).unwrap_or(usize::MAX);
        assert!(at("engine0 p99.9:") < at("engine0 p99:"));
        assert!(at("engine0 p99:") < at("<title>engine0: 1.00 µs"));
        // The axis reaches the longest tail.
        assert!(c.axis().hi >= 4000.0, "{:?}", c.axis());
        Ok(())
    }

    #[test]
    fn shares_are_percentages_on_a_whole_axis() -> TestResult {
        let mut c = chart(&[0.366, 0.05]);
        c.value_axis.kind = ValueKind::Share;
        c.value_axis.better = "higher is better".into();
        c.value_axis.title = "hit rate".into();
        let svg = c.render(&LIGHT);
        let needles = [
            ">36.6 %</text>",
            ">100 %</text>",
            ">hit rate (higher is better)</text>",
        ];
        assert_contains_all(&svg, &needles);
        assert!(!svg.contains("log scale"));
        Ok(())
    }

    #[test]
    fn an_empty_chart_says_so() -> TestResult {
        let mut c = chart(&[]);
        c.sections.clear();
        assert!(c.render(&LIGHT).contains("no measurements"));
        Ok(())
    }
}
