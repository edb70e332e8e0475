//! The boilerplate of builders, written once for the configuration and the scan
//! builders: methods that set one field and hand the builder back, and `IntoIterator`
//! for a builder whose `iter()` starts the scan.

/// Writes `pub fn name(mut self, arg: Type) -> Self` methods, each setting one field:
/// `/// doc` then `name(arg: Type) => field = value;` (`name() => field = value;` for a
/// method without an argument).
macro_rules! setters {
    ($($(#[$attr:meta])* $name:ident($($arg:ident: $ty:ty)?) => $field:ident = $value:expr;)*) => {
        $(
            $(#[$attr])*
            pub fn $name(mut self $(, $arg: $ty)?) -> Self {
                self.$field = $value;
                self
            }
        )*
    };
}

/// Implements `IntoIterator` for a scan builder by its `iter()` method, so that the builder
/// can go straight into a `for` loop: `into_iter_by_iter!(Builder => Scan, Item)`.
macro_rules! into_iter_by_iter {
    ($builder:ty => $scan:ty, $item:ty) => {
        impl IntoIterator for $builder {
            type Item = $item;
            type IntoIter = $scan;
            fn into_iter(self) -> $scan {
                self.iter()
            }
        }
    };
}

pub(crate) use {into_iter_by_iter, setters};
