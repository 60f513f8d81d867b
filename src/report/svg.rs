//! Small helpers for the hand-written SVG of the heat map and the timelines.

/// Escapes text for an XML text node or attribute value.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// About `target` round tick values (1, 2 or 5 × 10^k apart) from 0 to `span`.
pub fn nice_ticks(span: f64, target: usize) -> Vec<f64> {
    if span.is_nan() || span <= 0.0 || target == 0 {
        return vec![0.0];
    }
    let raw = span / target as f64;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * magnitude);
    let mut ticks = Vec::new();
    let mut i = 0u32;
    loop {
        let t = step * i as f64;
        if t > span + step * 1e-9 {
            break;
        }
        // Round to the step's precision so labels print cleanly.
        ticks.push((t / step).round() * step);
        i += 1;
    }
    ticks
}

/// A tick value without floating-point noise (0.30000000000000004 → "0.3").
pub fn tick_label(t: f64) -> String {
    let text = format!("{t:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Formats nanoseconds as seconds with millisecond precision.
pub fn secs(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1e9)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(
            escape(r#"<a href="x">&'"#),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }

    #[test]
    fn ticks_are_round() {
        assert_eq!(
            nice_ticks(60.0, 10),
            vec![0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0]
        );
        assert_eq!(nice_ticks(3.0, 10), vec![0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0]);
        assert_eq!(nice_ticks(0.0, 10), vec![0.0]);
        assert_eq!(tick_label(0.1 * 3.0), "0.3");
        assert_eq!(tick_label(20.0), "20");
    }
}
