//! Parsing the attribute's arguments: `operation = "..."` and `crate = path`.
//!
//! Only the shape is checked here; what the values must look like is in `valid`.

use proc_macro2::TokenStream;
use syn::meta::ParseNestedMeta;
use syn::parse::Parser;
use syn::{Expr, ExprLit, Lit, LitStr, Path};

/// Every argument the attribute accepts, for the "expected one of" message.
const ARGUMENTS: &str = "`operation`, `crate`";

/// The arguments as written, each at most once.
#[derive(Default)]
pub(crate) struct Args {
    /// `operation = "smtp.send"`: the operation name the approval must be bound to.
    pub(crate) operation: Option<LitStr>,
    /// `crate = path`: where `approval_gate` is, for crates that re-export it.
    pub(crate) krate: Option<Path>,
}

impl Args {
    /// Parses `operation = "...", crate = path` in any order; stops at the first problem.
    pub(crate) fn parse(tokens: TokenStream) -> syn::Result<Self> {
        let mut args = Self::default();
        syn::meta::parser(|meta| args.parse_one(&meta)).parse2(tokens)?;
        Ok(args)
    }

    fn parse_one(&mut self, meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
        if meta.path.is_ident("operation") {
            if self.operation.is_some() {
                return Err(meta.error("duplicate `operation` argument: give it once"));
            }
            self.operation = Some(string_value(meta, "operation = \"smtp.send\"")?);
        } else if meta.path.is_ident("crate") {
            if self.krate.is_some() {
                return Err(meta.error("duplicate `crate` argument: give it once"));
            }
            self.krate = Some(meta.value()?.call(Path::parse_mod_style)?);
        } else {
            let name = meta
                .path
                .get_ident()
                .map_or_else(|| "this argument".to_owned(), |name| format!("`{name}`"));
            return Err(meta.error(format!(
                "unknown argument {name}: expected one of: {ARGUMENTS}"
            )));
        }
        Ok(())
    }
}

/// The string literal after `=`, with a message that shows the expected form.
fn string_value(meta: &ParseNestedMeta<'_>, example: &str) -> syn::Result<LitStr> {
    let value: Expr = meta.value()?.parse()?;
    match value {
        Expr::Lit(ExprLit {
            lit: Lit::Str(lit), ..
        }) => Ok(lit),
        other => Err(syn::Error::new_spanned(
            other,
            format!("expected a string literal: `{example}`"),
        )),
    }
}
