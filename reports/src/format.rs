//! Number and text formatting shared by the charts and the tables: durations with units,
//! byte sizes, ratios, XML escaping, and a conservative estimate of rendered text width
//! (used for layout, since the SVG viewer, not this crate, renders the text).

/// Nanoseconds per unit, largest first.
const TIME_UNITS: [(f64, &str); 4] = [(1e9, "s"), (1e6, "ms"), (1e3, "µs"), (1.0, "ns")];

/// Formats `x` with three significant digits (no exponent), trailing zeros kept so that
/// neighbouring values line up ("1.20", "12.0", "120").
pub(crate) fn sig3(x: f64) -> String {
    let d = decimals(x.abs(), [99.95, 9.995]);
    format!("{x:.d$}")
}

/// How many decimals (0, 1 or 2) show a value of size `a`: none from `from[0]` up, one
/// from `from[1]` up, two below; the bounds are where rounding reaches the next digit.
fn decimals(a: f64, from: [f64; 2]) -> usize {
    if a >= from[0] {
        0
    } else if a >= from[1] {
        1
    } else {
        2
    }
}

/// Formats a decimal with at most `max_decimals` decimals and no trailing zeros.
pub(crate) fn trim_num(x: f64, max_decimals: usize) -> String {
    let s = format!("{x:.max_decimals$}");
    if s.contains('.') {
        let t = s.trim_end_matches('0').trim_end_matches('.');
        if t == "-0" {
            "0".to_string()
        } else {
            t.to_string()
        }
    } else {
        s
    }
}

/// The unit (divisor, name) that shows `ns` with one to three integer digits.
pub(crate) fn time_unit(ns: f64) -> (f64, &'static str) {
    for (div, name) in TIME_UNITS {
        if ns.abs() >= div * 0.9995 {
            return (div, name);
        }
    }
    (1.0, "ns")
}

/// A duration in nanoseconds as a short human string: "850 ns", "12.3 µs", "4.56 ms".
pub(crate) fn duration(ns: f64) -> String {
    if !ns.is_finite() {
        return "N/A".to_string();
    }
    if ns == 0.0 {
        return "0 ns".to_string();
    }
    let (div, name) = time_unit(ns);
    format!("{} {name}", sig3(ns / div))
}

/// A tick label for a duration axis whose largest value is `axis_max` ns: every tick
/// uses that value's unit, with only the decimals it needs.
pub(crate) fn duration_tick(ns: f64, axis_max: f64) -> String {
    if ns == 0.0 {
        return "0".to_string();
    }
    let (div, name) = time_unit(axis_max);
    format!("{} {name}", trim_num(ns / div, 3))
}

/// A tick label on a logarithmic duration axis: each tick in its own unit.
pub(crate) fn duration_log_tick(ns: f64) -> String {
    let (div, name) = time_unit(ns);
    format!("{} {name}", trim_num(ns / div, 3))
}

/// Superscript digits, for powers of ten on count axes.
const SUPERSCRIPTS: [char; 10] = ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹'];

/// A count as an axis label: millions as "1 M", "50 M" (billions as "2 G"), smaller
/// powers of ten as "10⁵", anything else with thousands separators.
pub(crate) fn count_tick(n: f64) -> String {
    if !n.is_finite() || n < 0.0 {
        return "N/A".to_string();
    }
    if n >= 1e9 * 0.9995 {
        return format!("{} G", trim_num(n / 1e9, 2));
    }
    if n >= 1e6 * 0.9995 {
        return format!("{} M", trim_num(n / 1e6, 2));
    }
    let exponent = n.log10().round();
    if n >= 1000.0 && (10f64.powf(exponent) / n - 1.0).abs() < 1e-9 {
        let digits: String = (exponent as u32)
            .to_string()
            .chars()
            .filter_map(|c| c.to_digit(10).map(|d| SUPERSCRIPTS[d as usize]))
            .collect();
        return format!("10{digits}");
    }
    thousands(n.round() as u64)
}

/// A rate as an axis label: "500", "20 k", "1.5 M".
pub(crate) fn rate_tick(x: f64) -> String {
    if !x.is_finite() {
        return "N/A".to_string();
    }
    if x >= 1e6 * 0.9995 {
        format!("{} M", trim_num(x / 1e6, 2))
    } else if x >= 1e3 * 0.9995 {
        format!("{} k", trim_num(x / 1e3, 2))
    } else {
        trim_num(x, 2)
    }
}

/// A rate per second with three significant digits: "850/s", "12.3 k/s", "1.50 M/s".
pub(crate) fn rate(x: f64) -> String {
    if !x.is_finite() {
        return "N/A".to_string();
    }
    if x >= 1e6 * 0.9995 {
        format!("{} M/s", sig3(x / 1e6))
    } else if x >= 1e3 * 0.9995 {
        format!("{} k/s", sig3(x / 1e3))
    } else {
        format!("{}/s", trim_num(x, 1))
    }
}

/// An integer with thousands separators: "1,500,000".
pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A ratio: "0.42×", "3.1×", "12×".
pub(crate) fn ratio(r: f64) -> String {
    if !r.is_finite() {
        return "N/A".to_string();
    }
    let d = decimals(r, [9.95, 0.995]);
    format!("{r:.d$}×")
}

/// A share (0 to 1) as a percentage: "36.6 %", "5.20 %", "100 %".
pub(crate) fn percent(share: f64) -> String {
    if !share.is_finite() {
        return "N/A".to_string();
    }
    format!("{} %", sig3(share * 100.0))
}

/// A tick label on a share axis: "0 %", "20 %".
pub(crate) fn percent_tick(share: f64) -> String {
    format!("{} %", trim_num(share * 100.0, 1))
}

/// A tick label on a ratio axis.
pub(crate) fn ratio_tick(r: f64) -> String {
    format!("{}×", trim_num(r, 3))
}

/// A byte count in binary units: "512 B", "4 KiB", "1.5 MiB".
pub(crate) fn bytes(b: f64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    if !b.is_finite() {
        return "N/A".to_string();
    }
    let mut v = b;
    let mut i = 0;
    while v >= 1023.95 && i + 1 < UNITS.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{} B", trim_num(v, 0))
    } else {
        format!(
            "{} {}",
            trim_num(v, if v >= 100.0 { 0 } else { 1 }),
            UNITS[i]
        )
    }
}

/// Escapes text for an XML attribute or text node.
pub(crate) fn xml(s: &str) -> String {
    escaped(s, |c| match c {
        '&' => Some("&amp;"),
        '<' => Some("&lt;"),
        '>' => Some("&gt;"),
        '"' => Some("&quot;"),
        '\'' => Some("&apos;"),
        c if c.is_control() => Some(" "),
        _ => None,
    })
}

/// Escapes text for a Markdown table cell: pipes, newlines, and HTML-significant angle
/// brackets.
pub(crate) fn md_cell(s: &str) -> String {
    escaped(s, |c| match c {
        '|' => Some("\\|"),
        '<' => Some("&lt;"),
        '>' => Some("&gt;"),
        '\n' | '\r' | '\t' => Some(" "),
        _ => None,
    })
}

/// `s` with every character `escape` has a replacement for replaced by it.
fn escaped(s: &str, escape: impl Fn(char) -> Option<&'static str>) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match escape(c) {
            Some(text) => out.push_str(text),
            None => out.push(c),
        }
    }
    out
}

/// Advance width of `c` in em, rounded up from DejaVu Sans (wider than Verdana, Arial or
/// Helvetica), so layouts made from it leave room in every common sans-serif font.
fn char_em(c: char) -> f64 {
    match c {
        ' ' | 'i' | 'j' | 'l' | '\'' | '|' | '.' | ',' | ':' | ';' | '!' | '·' => 0.34,
        'f' | 't' | 'r' | 'I' | '(' | ')' | '[' | ']' | '/' | '\\' | '-' => 0.42,
        'm' | 'w' | 'M' | 'W' | '%' | '@' | '—' | '…' => 1.0,
        c if c.is_ascii_uppercase() => 0.8,
        c if c.is_ascii() => 0.66,
        _ => 0.9,
    }
}

/// Estimated width in pixels of `s` set at `size` px (bold adds 10%).
pub(crate) fn text_width(s: &str, size: f64, bold: bool) -> f64 {
    let w: f64 = s.chars().map(char_em).sum::<f64>() * size;
    if bold {
        w * 1.1
    } else {
        w
    }
}

/// `s` cut (with an ellipsis) so that its estimated width fits `max_px`.
pub(crate) fn fit_text(s: &str, size: f64, bold: bool, max_px: f64) -> String {
    if text_width(s, size, bold) <= max_px {
        return s.to_string();
    }
    let mut out = String::new();
    let budget = max_px - text_width("…", size, bold);
    for c in s.chars() {
        out.push(c);
        if text_width(&out, size, bold) > budget {
            out.pop();
            break;
        }
    }
    format!("{}…", out.trim_end())
}

/// `s` on one line if it fits `max_px`, else on two: broken after the last space, `-`,
/// `_`, `.`, `/` or `·` that lets the first line fit (else wherever it must), the second
/// line cut with an ellipsis if it is still too long.
pub(crate) fn split_label(s: &str, size: f64, max_px: f64) -> Vec<String> {
    if text_width(s, size, false) <= max_px {
        return vec![s.to_string()];
    }
    let fits = |end: usize| text_width(s[..end].trim_end(), size, false) <= max_px;
    let mut soft = None;
    let mut hard = 0;
    for (i, c) in s.char_indices() {
        let end = i + c.len_utf8();
        if !fits(end) {
            break;
        }
        hard = end;
        if matches!(c, ' ' | '-' | '_' | '.' | '/' | '·') {
            soft = Some(end);
        }
    }
    let end = soft
        .unwrap_or(hard)
        .max(s.chars().next().map_or(0, char::len_utf8));
    vec![
        s[..end].trim_end().to_string(),
        fit_text(s[end..].trim_start(), size, false, max_px),
    ]
}

/// Splits `s` at spaces into lines whose estimated width fits `max_px`; a single word
/// too long for a line is cut with an ellipsis.
pub(crate) fn wrap(s: &str, size: f64, bold: bool, max_px: f64) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in s.split_whitespace() {
        let candidate = if line.is_empty() {
            word.to_string()
        } else {
            format!("{line} {word}")
        };
        if text_width(&candidate, size, bold) <= max_px || line.is_empty() {
            line = candidate;
        } else {
            lines.push(fit_text(&line, size, bold, max_px));
            line = word.to_string();
        }
    }
    if !line.is_empty() {
        lines.push(fit_text(&line, size, bold, max_px));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{assert_formats, TestResult};

    #[test]
    fn durations_pick_a_readable_unit() -> TestResult {
        let cases = [
            (850.0, "850 ns"),
            (12_345.0, "12.3 µs"),
            (4_560_000.0, "4.56 ms"),
            (999.8, "1.00 µs"),
            (2.5e9, "2.50 s"),
            (0.0, "0 ns"),
            (f64::NAN, "N/A"),
        ];
        assert_formats(duration, &cases);
        assert_formats(|t| duration_tick(t, 5e4), &[(0.0, "0"), (2.5e4, "25 µs")]);
        assert_formats(duration_log_tick, &[(1e3, "1 µs"), (100.0, "100 ns")]);
        Ok(())
    }

    #[test]
    fn ratios_bytes_and_numbers() -> TestResult {
        assert_formats(ratio, &[(0.4234, "0.42×"), (3.04, "3.0×"), (12.4, "12×")]);
        let shares = [(0.36641, "36.6 %"), (0.052, "5.20 %"), (1.0, "100 %")];
        assert_formats(percent, &shares);
        assert_formats(
            percent_tick,
            &[(0.0, "0 %"), (0.2, "20 %"), (0.125, "12.5 %")],
        );
        assert_formats(ratio_tick, &[(0.1, "0.1×")]);
        let mib = 1048576.0;
        assert_formats(
            bytes,
            &[(512.0, "512 B"), (mib, "1 MiB"), (1.5 * mib, "1.5 MiB")],
        );
        assert_formats(
            |(x, digits)| trim_num(x, digits),
            &[((2.500, 3), "2.5"), ((-0.0001, 2), "0")],
        );
        assert_formats(sig3, &[(1.234, "1.23")]);
        assert_formats(
            thousands,
            &[(1_500_000, "1,500,000"), (999, "999"), (0, "0")],
        );
        Ok(())
    }

    #[test]
    fn counts_and_rates_read_as_the_axes_print_them() -> TestResult {
        let counts = [
            (1e5, "10⁵"),
            (1e4, "10⁴"),
            (1e6, "1 M"),
            (1e7, "10 M"),
            (5e7, "50 M"),
            (2.5e9, "2.5 G"),
            (200_000.0, "200,000"),
            (500.0, "500"),
        ];
        assert_formats(count_tick, &counts);
        assert_formats(
            rate_tick,
            &[(500.0, "500"), (2e4, "20 k"), (1.5e6, "1.5 M")],
        );
        assert_formats(
            rate,
            &[
                (850.0, "850/s"),
                (12_340.0, "12.3 k/s"),
                (1.5e6, "1.50 M/s"),
            ],
        );
        Ok(())
    }

    #[test]
    fn escaping_and_fitting() -> TestResult {
        assert_eq!(xml("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
        assert_eq!(md_cell("a|b\nc"), "a\\|b c");
        let long = "a very long note that will not fit in the space it is given";
        let cut = fit_text(long, 12.0, false, 120.0);
        assert!(cut.ends_with('…'));
        assert!(text_width(&cut, 12.0, false) <= 120.0);
        assert_eq!(fit_text("short", 12.0, false, 120.0), "short");
        let lines = wrap(long, 12.0, false, 150.0);
        assert!(lines.len() > 2);
        assert!(lines.iter().all(|l| text_width(l, 12.0, false) <= 150.0));
        assert_eq!(lines.join(" "), long);
        assert_eq!(split_label("aimeta", 12.0, 100.0), vec!["aimeta"]);
        let two = split_label("an-engine-with-a-long-name paged", 12.0, 130.0);
        assert_eq!(two.len(), 2);
        assert!(two[0].ends_with('-') && two.iter().all(|l| text_width(l, 12.0, false) <= 130.0));
        assert_eq!(
            split_label("xxxxxxxxxxxxxxxxxxxxxxxxxxxx", 12.0, 60.0).len(),
            2
        );
        Ok(())
    }
}
