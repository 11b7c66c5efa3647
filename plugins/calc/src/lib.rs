//! `calc`: evaluate arithmetic expressions.
//!
//! Supports `+ - * / % ^`, parentheses, unary minus, the constants `pi` and
//! `e`, and the functions `sqrt abs ln log10 sin cos tan floor ceil round`.

use toolhost_sdk::prelude::*;

struct Calc;

impl Plugin for Calc {
    fn manifest() -> Manifest {
        Manifest::new("calc", env!("CARGO_PKG_VERSION"), "Evaluate arithmetic expressions").tool(
            Tool::new(
                "calculate",
                "Evaluate an arithmetic expression with + - * / % ^, parentheses, \
                 pi, e and sqrt/abs/ln/log10/sin/cos/tan/floor/ceil/round.",
            )
            .param("expression", Type::String, "the expression, e.g. 2 * (3 + 4)", Required)
            .agent_callable(true)
            .distributed_exposed(true)
            .tag("math")
            .example(json!({ "expression": "2 * (3 + 4) ^ 2" })),
        )
    }

    fn invoke(tool: &str, args: Args) -> Result<Output, ToolError> {
        match tool {
            "calculate" => {
                let expression: String = args.get("expression")?;
                let value = evaluate(&expression).map_err(ToolError::invalid_args)?;
                Ok(json!({ "expression": expression, "value": value }).into())
            }
            other => Err(ToolError::unknown_tool(other)),
        }
    }
}

toolhost_sdk::export_plugin!(Calc);

/// Deeper nesting than this is refused rather than risking the stack.
const MAX_DEPTH: usize = 200;

fn evaluate(expression: &str) -> Result<f64, String> {
    let mut parser = Parser { chars: expression.chars().collect(), at: 0, depth: 0 };
    let value = parser.sum()?;
    parser.skip_spaces();
    match parser.peek() {
        None if value.is_finite() => Ok(value),
        None => Err(format!("the result is not a finite number ({value})")),
        Some(c) => Err(format!("unexpected `{c}` at position {}", parser.at + 1)),
    }
}

struct Parser {
    chars: Vec<char>,
    at: usize,
    depth: usize,
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn skip_spaces(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.at += 1;
        }
    }

    fn eat(&mut self, c: char) -> bool {
        self.skip_spaces();
        if self.peek() == Some(c) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn sum(&mut self) -> Result<f64, String> {
        let mut value = self.product()?;
        loop {
            if self.eat('+') {
                value += self.product()?;
            } else if self.eat('-') {
                value -= self.product()?;
            } else {
                return Ok(value);
            }
        }
    }

    fn product(&mut self) -> Result<f64, String> {
        let mut value = self.power()?;
        loop {
            if self.eat('*') {
                value *= self.power()?;
            } else if self.eat('/') {
                let divisor = self.power()?;
                if divisor == 0.0 {
                    return Err("division by zero".into());
                }
                value /= divisor;
            } else if self.eat('%') {
                let divisor = self.power()?;
                if divisor == 0.0 {
                    return Err("remainder by zero".into());
                }
                value %= divisor;
            } else {
                return Ok(value);
            }
        }
    }

    /// `^` binds tighter than `*` and is right-associative.
    fn power(&mut self) -> Result<f64, String> {
        let base = self.unary()?;
        if self.eat('^') {
            let exponent = self.nested(Self::power)?;
            Ok(base.powf(exponent))
        } else {
            Ok(base)
        }
    }

    fn unary(&mut self) -> Result<f64, String> {
        if self.eat('-') {
            Ok(-self.nested(Self::unary)?)
        } else if self.eat('+') {
            self.nested(Self::unary)
        } else {
            self.atom()
        }
    }

    fn nested(&mut self, rule: fn(&mut Self) -> Result<f64, String>) -> Result<f64, String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(format!("expression nested deeper than {MAX_DEPTH} levels"));
        }
        let value = rule(self);
        self.depth -= 1;
        value
    }

    fn atom(&mut self) -> Result<f64, String> {
        self.skip_spaces();
        let start = self.at;
        match self.peek() {
            Some('(') => {
                self.at += 1;
                let value = self.nested(Self::sum)?;
                if self.eat(')') { Ok(value) } else { Err(format!("missing `)` for the `(` at position {}", start + 1)) }
            }
            Some(c) if c.is_ascii_digit() || c == '.' => {
                while self.peek().is_some_and(|c| c.is_ascii_digit() || c == '.') {
                    self.at += 1;
                }
                if matches!(self.peek(), Some('e' | 'E')) {
                    self.at += 1;
                    if matches!(self.peek(), Some('+' | '-')) {
                        self.at += 1;
                    }
                    while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                        self.at += 1;
                    }
                }
                let text: String = self.chars[start..self.at].iter().collect();
                text.parse().map_err(|_| format!("`{text}` is not a number"))
            }
            Some(c) if c.is_ascii_alphabetic() => {
                while self.peek().is_some_and(|c| c.is_ascii_alphanumeric()) {
                    self.at += 1;
                }
                let name: String = self.chars[start..self.at].iter().collect();
                self.named(&name)
            }
            Some(c) => Err(format!("unexpected `{c}` at position {}", start + 1)),
            None => Err("the expression ends too early".into()),
        }
    }

    fn named(&mut self, name: &str) -> Result<f64, String> {
        let function: fn(f64) -> f64 = match name {
            "pi" => return Ok(std::f64::consts::PI),
            "e" => return Ok(std::f64::consts::E),
            "sqrt" => f64::sqrt,
            "abs" => f64::abs,
            "ln" => f64::ln,
            "log10" => f64::log10,
            "sin" => f64::sin,
            "cos" => f64::cos,
            "tan" => f64::tan,
            "floor" => f64::floor,
            "ceil" => f64::ceil,
            "round" => f64::round,
            other => return Err(format!("unknown name `{other}`")),
        };
        if !self.eat('(') {
            return Err(format!("`{name}` needs an argument in parentheses"));
        }
        let argument = self.nested(Self::sum)?;
        if !self.eat(')') {
            return Err(format!("missing `)` after the argument of `{name}`"));
        }
        Ok(function(argument))
    }
}

#[cfg(test)]
mod tests {
    use super::evaluate;

    #[test]
    fn precedence_and_associativity() {
        assert_eq!(evaluate("2 * (3 + 4) ^ 2"), Ok(98.0));
        assert_eq!(evaluate("2 ^ 3 ^ 2"), Ok(512.0));
        assert_eq!(evaluate("-2 ^ 2"), Ok(4.0));
        assert_eq!(evaluate("10 - 4 - 3"), Ok(3.0));
        assert_eq!(evaluate("sqrt(16) + abs(-1.5e1)"), Ok(19.0));
    }

    #[test]
    fn errors_say_where() {
        assert_eq!(evaluate("1 / 0"), Err("division by zero".into()));
        assert_eq!(evaluate("1 + * 2"), Err("unexpected `*` at position 5".into()));
        assert_eq!(evaluate("(1 + 2"), Err("missing `)` for the `(` at position 1".into()));
        assert!(evaluate(&"(".repeat(10_000)).unwrap_err().contains("nested deeper"));
    }
}
