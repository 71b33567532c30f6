//! The part of Jinja that reference sets use (`gen` entries and templates
//! of fsspec's reference spec, version 1): `{{ expression }}` holes in a
//! string, where an expression is integers, quoted strings, names bound by
//! the `gen` dimensions and the `templates`, `+ - * / // % **` (with `~`
//! and `+` joining strings), unary minus and parentheses.
//!
//! Invariants: rendering never panics and never loops; every value is
//! bounded (integers are `i128` with checked arithmetic, strings at most
//! [`MAX_TEXT`] bytes), so a hostile template is an error naming it, not a
//! crash or an allocation bomb. Anything else Jinja can do (filters,
//! statements, attribute access) is refused with the reason.

use std::collections::HashMap;

/// The longest string an expression may build.
pub const MAX_TEXT: usize = 4096;

/// Why a template cannot be rendered.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TemplateError {
    /// Any of the others, in the template that caused it.
    #[error("template {template:?}: {error}")]
    In {
        template: String,
        error: Box<TemplateError>,
    },
    #[error("`{{{{` without `}}}}`")]
    Unclosed,
    #[error("Jinja statements and comments are not read")]
    Statements,
    #[error("renders longer than {MAX_TEXT} bytes")]
    RendersTooLong,
    #[error("a string longer than {MAX_TEXT} bytes")]
    StringTooLong,
    #[error("{0} is a string longer than {MAX_TEXT} bytes")]
    NameTooLong(String),
    #[error("{0} is too large")]
    IntTooLarge(String),
    #[error("a string without its closing quote")]
    UnclosedQuote,
    #[error("{0:?} is not part of the expressions nzfs reads")]
    NotRead(String),
    /// A token where none may stand (shown as it was read).
    #[error("unexpected {0}")]
    Unexpected(String),
    #[error("{op} of the string {value:?}")]
    StringOperand { op: &'static str, value: String },
    #[error("an integer overflows")]
    Overflow,
    #[error("`/` gives a float in Jinja; offsets and keys need `//`")]
    FloatDivision,
    #[error("a division by zero")]
    DivisionByZero,
    #[error("the exponent {0}")]
    Exponent(i128),
    #[error("an expression nested too deeply")]
    TooDeep,
    #[error("an expression ends early")]
    EndsEarly,
    #[error("{0} is not a dimension or template")]
    Undefined(String),
    #[error("`(` without `)`")]
    UnclosedParen,
}

impl TemplateError {
    fn within(self, template: &str) -> TemplateError {
        TemplateError::In {
            template: template.to_string(),
            error: Box::new(self),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    Int(i128),
    Str(String),
}

impl Val {
    fn text(&self) -> String {
        match self {
            Val::Int(i) => i.to_string(),
            Val::Str(s) => s.clone(),
        }
    }
}

/// Names an expression may use: a `gen` entry's dimension values, and the
/// set's templates (text, rendered themselves on use).
pub type Scope<'a> = HashMap<&'a str, Val>;

/// `template` with each `{{ expression }}` replaced by its value.
pub fn render(template: &str, scope: &Scope) -> Result<String, TemplateError> {
    let mut out = String::new();
    let mut rest = template;
    while let Some(at) = rest.find("{{") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let end = after
            .find("}}")
            .ok_or_else(|| TemplateError::Unclosed.within(template))?;
        let value = eval(&after[..end], scope).map_err(|e| e.within(template))?;
        out.push_str(&value.text());
        if out.len() > MAX_TEXT {
            return Err(TemplateError::RendersTooLong.within(template));
        }
        rest = &after[end + 2..];
    }
    if rest.contains("{%") || rest.contains("{#") {
        return Err(TemplateError::Statements.within(template));
    }
    out.push_str(rest);
    Ok(out)
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Int(i128),
    Str(String),
    Name(String),
    Op(&'static str),
}

fn tokens(expr: &str) -> Result<Vec<Tok>, TemplateError> {
    let mut out = Vec::new();
    let b = expr.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            let start = i;
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
                i += 1;
            }
            let digits: String = expr[start..i].chars().filter(|&c| c != '_').collect();
            out.push(Tok::Int(
                digits.parse().map_err(|_| TemplateError::IntTooLarge(digits))?,
            ));
        } else if c == b'\'' || c == b'"' {
            let end = expr[i + 1..].find(c as char).ok_or(TemplateError::UnclosedQuote)?;
            out.push(Tok::Str(expr[i + 1..i + 1 + end].to_string()));
            i += end + 2;
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Name(expr[start..i].to_string()));
        } else {
            let op = ["**", "//", "+", "-", "*", "/", "%", "~", "(", ")"]
                .into_iter()
                .find(|op| expr[i..].starts_with(op))
                .ok_or_else(|| TemplateError::NotRead(expr[i..].to_string()))?;
            out.push(Tok::Op(op));
            i += op.len();
        }
    }
    Ok(out)
}

/// The value of one expression.
pub fn eval(expr: &str, scope: &Scope) -> Result<Val, TemplateError> {
    let toks = tokens(expr)?;
    let mut p = Parser {
        toks: &toks,
        at: 0,
        scope,
        depth: 0,
    };
    let v = p.concat()?;
    if p.at != toks.len() {
        return Err(TemplateError::Unexpected(format!("{:?} in {expr:?}", toks[p.at])));
    }
    Ok(v)
}

struct Parser<'a> {
    toks: &'a [Tok],
    at: usize,
    scope: &'a Scope<'a>,
    depth: usize,
}

fn int(v: &Val, op: &'static str) -> Result<i128, TemplateError> {
    match v {
        Val::Int(i) => Ok(*i),
        Val::Str(s) => Err(TemplateError::StringOperand { op, value: s.clone() }),
    }
}

fn overflow() -> TemplateError {
    TemplateError::Overflow
}

impl Parser<'_> {
    fn peek_op(&self) -> Option<&'static str> {
        match self.toks.get(self.at) {
            Some(Tok::Op(op)) => Some(op),
            _ => None,
        }
    }

    /// `~` joins the text of its operands, below `+` and `-` (as Jinja's
    /// grammar has it).
    fn concat(&mut self) -> Result<Val, TemplateError> {
        let mut left = self.sum()?;
        while self.peek_op() == Some("~") {
            self.at += 1;
            let right = self.sum()?;
            left = Val::Str(left.text() + &right.text());
            if left.text().len() > MAX_TEXT {
                return Err(TemplateError::StringTooLong);
            }
        }
        Ok(left)
    }

    /// `+ -`, left to right.
    fn sum(&mut self) -> Result<Val, TemplateError> {
        let mut left = self.product()?;
        while let Some(op @ ("+" | "-")) = self.peek_op() {
            self.at += 1;
            let right = self.product()?;
            left = match (op, left, right) {
                ("+", Val::Str(l), Val::Str(r)) => Val::Str(l + &r),
                ("+", l, r) => Val::Int(int(&l, "+")?.checked_add(int(&r, "+")?).ok_or_else(overflow)?),
                (_, l, r) => Val::Int(int(&l, "-")?.checked_sub(int(&r, "-")?).ok_or_else(overflow)?),
            };
            if let Val::Str(s) = &left
                && s.len() > MAX_TEXT
            {
                return Err(TemplateError::StringTooLong);
            }
        }
        Ok(left)
    }

    /// `* // %`, left to right. Jinja's `/` gives a float (`12 / 4` is
    /// `3.0`), which no offset, length or key of a set can use: refused.
    fn product(&mut self) -> Result<Val, TemplateError> {
        let mut left = self.product_operand()?;
        while let Some(op @ ("*" | "/" | "//" | "%")) = self.peek_op() {
            self.at += 1;
            if op == "/" {
                return Err(TemplateError::FloatDivision);
            }
            let right = self.product_operand()?;
            let (l, r) = (int(&left, op)?, int(&right, op)?);
            if op != "*" && r == 0 {
                return Err(TemplateError::DivisionByZero);
            }
            left = Val::Int(match op {
                "*" => l.checked_mul(r).ok_or_else(overflow)?,
                // Python's floor division and modulo.
                "//" => l.div_euclid(r) - i128::from(r < 0 && l.rem_euclid(r) != 0),
                _ => {
                    let m = l.rem_euclid(r);
                    if r < 0 && m != 0 { m + r } else { m }
                }
            });
        }
        Ok(left)
    }

    /// `**`, left to right over unary operands (Jinja's grammar, unlike
    /// Python's: `2 ** 3 ** 2` is 64 and `-2 ** 2` is 4).
    fn product_operand(&mut self) -> Result<Val, TemplateError> {
        let mut left = self.unary()?;
        while self.peek_op() == Some("**") {
            self.at += 1;
            let exp = self.unary()?;
            let (b, e) = (int(&left, "**")?, int(&exp, "**")?);
            let e = u32::try_from(e).map_err(|_| TemplateError::Exponent(e))?;
            left = Val::Int(b.checked_pow(e).ok_or_else(overflow)?);
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Val, TemplateError> {
        if self.peek_op() == Some("-") {
            self.at += 1;
            self.depth += 1;
            if self.depth > 64 {
                return Err(TemplateError::TooDeep);
            }
            let v = self.unary()?;
            self.depth -= 1;
            return Ok(Val::Int(int(&v, "-")?.checked_neg().ok_or_else(overflow)?));
        }
        self.atom()
    }

    fn atom(&mut self) -> Result<Val, TemplateError> {
        self.depth += 1;
        if self.depth > 64 {
            return Err(TemplateError::TooDeep);
        }
        let tok = self.toks.get(self.at).cloned().ok_or(TemplateError::EndsEarly)?;
        self.at += 1;
        let v = match tok {
            Tok::Int(i) => Val::Int(i),
            Tok::Str(s) => Val::Str(s),
            // A long text is refused before it is copied (a template of
            // megabytes was copied on each use, then refused).
            Tok::Name(n) => match self.scope.get(n.as_str()) {
                None => return Err(TemplateError::Undefined(n)),
                Some(Val::Str(s)) if s.len() > MAX_TEXT => {
                    return Err(TemplateError::NameTooLong(n));
                }
                Some(v) => v.clone(),
            },
            Tok::Op("(") => {
                let v = self.concat()?;
                if self.peek_op() != Some(")") {
                    return Err(TemplateError::UnclosedParen);
                }
                self.at += 1;
                v
            }
            Tok::Op(op) => return Err(TemplateError::Unexpected(format!("{op:?}"))),
        };
        self.depth -= 1;
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope() -> Scope<'static> {
        [("i", Val::Int(3)), ("u", Val::Str("data".into())), ("n", Val::Int(-7))]
            .into_iter()
            .collect()
    }

    /// The values are Python's and Jinja's for the same expressions.
    #[test]
    fn expressions_evaluate_as_jinja_does() {
        let s = scope();
        let r = |t: &str| render(t, &s);
        assert_eq!(r("gen_key{{i}}").unwrap(), "gen_key3");
        assert_eq!(r("{{(i + 1) * 1000}}").unwrap(), "4000");
        assert_eq!(r("http://{{u}}_{{ i }}.nc").unwrap(), "http://data_3.nc");
        assert_eq!(r("{{ 2 ** 3 ** 2 }}").unwrap(), "64");
        assert_eq!(r("{{ -2 ** 2 }}").unwrap(), "4");
        assert_eq!(r("{{ u ~ i + 1 }}").unwrap(), "data4");
        assert_eq!(
            r("{{ n // 2 }} {{ n % 2 }} {{ 7 // -2 }} {{ 7 % -2 }}").unwrap(),
            "-4 1 -4 -1"
        );
        assert_eq!(r("{{ u ~ i }}{{ 'x' + \"y\" }}").unwrap(), "data3xy");
        assert_eq!(r("plain").unwrap(), "plain");
        for bad in [
            "{{ i",
            "{{ j }}",
            "{{ 1 / 0 }}",
            "{{ 12 / 4 }}",
            "{{ u * 2 }}",
            "{{ 10 ** 100 }}",
            "{{ i | string }}",
            "{% for x in y %}",
            "{{ (1 }}",
            "{{ 'x }}",
            "{{ 2 ** -1 }}",
        ] {
            assert!(r(bad).is_err(), "{bad}");
        }
        let deep = format!("{{{{ {}1{} }}}}", "(".repeat(500), ")".repeat(500));
        assert!(r(&deep).is_err());
        let long = format!("{{{{ {} }}}}", vec!["u"; 2000].join(" ~ "));
        assert!(r(&long).is_err());
    }

    /// A template longer than any string may be is refused on use, naming
    /// it, without a copy per use (a 16 MiB template used by 1,024
    /// references took 37 s).
    #[test]
    fn a_long_template_is_refused_by_name() {
        let big = "x".repeat(16 << 20);
        let scope: Scope = [("u", Val::Str(big))].into_iter().collect();
        for _ in 0..1024 {
            let e = render("{{u}}", &scope).unwrap_err();
            assert!(e.to_string().contains("u is a string longer than"), "{e}");
        }
    }
}
