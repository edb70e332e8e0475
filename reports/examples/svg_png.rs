//! Renders SVG charts to PNG, to look at them where no browser is at hand:
//! `cargo run -p aimeta-reports --example svg_png -- OUT_DIR FILE.svg...`.

use resvg::{tiny_skia, usvg};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let out = std::path::PathBuf::from(args.next().ok_or("usage: svg_png OUT_DIR FILE.svg...")?);
    std::fs::create_dir_all(&out)?;
    let mut fontdb = usvg::fontdb::Database::new();
    fontdb.load_system_fonts();
    let opt = usvg::Options {
        fontdb: std::sync::Arc::new(fontdb),
        ..usvg::Options::default()
    };
    for path in args {
        let tree = usvg::Tree::from_str(&std::fs::read_to_string(&path)?, &opt)?;
        let size = tree.size().to_int_size();
        let mut pixmap =
            tiny_skia::Pixmap::new(size.width(), size.height()).ok_or("an empty chart")?;
        resvg::render(&tree, tiny_skia::Transform::default(), &mut pixmap.as_mut());
        let name = std::path::Path::new(&path)
            .file_name()
            .ok_or("no file name")?;
        let target = out.join(name).with_extension("png");
        pixmap.save_png(&target)?;
        println!("{}", target.display());
    }
    Ok(())
}
