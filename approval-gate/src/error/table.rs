//! How the table in `error.rs` becomes [`Error`](super::Error) and
//! [`ErrorCode`](super::ErrorCode): the one place that expands it.

/// Declares `Error` and `ErrorCode` from one table that names each kind once.
///
/// Each variant of `Error` is written as usual (its docs, its `#[error]` message, its fields)
/// and carries, after the message, `#[code("snake_name", Class, Family, "doc line.")]`: the
/// stable name of its code (what `as_str`, `Display` and serde give), its
/// [`ErrorClass`](super::ErrorClass) and [`ErrorFamily`](super::ErrorFamily) (from which every
/// front end derives its treatment), and the code's doc line. The variant of `ErrorCode` takes
/// the same name as the `Error` variant; `ErrorCode::ALL` (in declaration order),
/// `ErrorCode::as_str`, `ErrorCode::class`, `ErrorCode::family` and `Error::code` follow from
/// the table.
macro_rules! error_table {
    (
        $(#[$code_attr:meta])*
        pub enum ErrorCode;

        $(#[$error_attr:meta])*
        pub enum Error {
            $(
                $(#[doc = $doc:literal])*
                #[error($($message:tt)*)]
                #[code($name:literal, $class:ident, $family:ident, $code_doc:literal)]
                $variant:ident $(($($tuple:tt)*))? $({$($fields:tt)*})?,
            )*
        }
    ) => {
        $(#[$error_attr])*
        pub enum Error {
            $(
                $(#[doc = $doc])*
                #[error($($message)*)]
                $variant $(($($tuple)*))? $({$($fields)*})?,
            )*
        }

        $(#[$code_attr])*
        pub enum ErrorCode {
            $(
                #[doc = concat!(
                    "[`Error::", stringify!($variant), "`]: ", $code_doc,
                    " Class `", stringify!($class), "`, family `", stringify!($family), "`."
                )]
                #[serde(rename = $name)]
                $variant,
            )*
        }

        impl Error {
            /// The kind of error, as a stable code: what audit lines, the CLI's `--json` and MCP
            /// answers carry.
            #[must_use]
            pub fn code(&self) -> ErrorCode {
                match self {
                    $(Self::$variant { .. } => ErrorCode::$variant,)*
                }
            }
        }

        impl ErrorCode {
            /// Every code, in declaration order.
            pub const ALL: &'static [ErrorCode] = &[$(Self::$variant),*];

            /// The stable name, e.g. `already_consumed`.
            #[must_use]
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $name,)*
                }
            }

            /// What a front end must do about an error of this code.
            #[must_use]
            pub fn class(self) -> super::ErrorClass {
                match self {
                    $(Self::$variant => super::ErrorClass::$class,)*
                }
            }

            /// Which refusal or failure this code is.
            #[must_use]
            pub fn family(self) -> super::ErrorFamily {
                match self {
                    $(Self::$variant => super::ErrorFamily::$family,)*
                }
            }
        }
    };
}

pub(super) use error_table;
