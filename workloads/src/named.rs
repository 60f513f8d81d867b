//! [`named_enum!`]: the one way a choice the command line and `test.json` spell by name
//! (`--client grpc|redis`, `--read-path`, `--set-read`, `--workload`) is declared. Each
//! variant is written once with its name; `name`, `ALL`, `from_name`, `FromStr` (the error
//! lists every name), `Display` and serde (as the name) follow from that line.
//!
//! Invariant: `name` and `from_name` are inverse, and serde writes and reads exactly the
//! names (a field may be added to `test.json`, a name never changes).

/// `name, or` for the list of accepted names in an error: `a or b`, `a, b or c`.
pub fn or_list(names: &[&str]) -> String {
    match names.split_last() {
        None => String::new(),
        Some((last, [])) => (*last).to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

/// Declares a `Copy` enum whose variants are spelt by name:
/// `named_enum! { /// docs  pub enum Kind "what it is" { /// docs  A = "a", B = "b" } }`.
/// The first variant is the `Default`. `"what it is"` names the choice in errors
/// (`unknown client protocol "x": expected grpc or redis`).
#[macro_export]
macro_rules! named_enum {
    ($(#[$meta:meta])* $vis:vis enum $enum:ident $what:literal { $(#[$first_meta:meta])* $first:ident = $first_name:literal $(, $(#[$vmeta:meta])* $variant:ident = $name:literal)* $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
        $vis enum $enum {
            $(#[$first_meta])*
            #[default]
            $first,
            $($(#[$vmeta])* $variant,)*
        }

        impl $enum {
            /// Every variant, in declaration order.
            pub const ALL: &[$enum] = &[$enum::$first, $($enum::$variant),*];

            /// The name the command line and `test.json` use.
            pub fn name(self) -> &'static str {
                match self {
                    $enum::$first => $first_name,
                    $($enum::$variant => $name,)*
                }
            }

            /// The variant called `name`, if any.
            pub fn from_name(name: &str) -> Option<$enum> {
                $enum::ALL.iter().copied().find(|v| v.name() == name)
            }

            /// Every name, in declaration order.
            pub fn names() -> Vec<&'static str> {
                $enum::ALL.iter().map(|v| v.name()).collect()
            }
        }

        impl std::str::FromStr for $enum {
            type Err = String;
            fn from_str(s: &str) -> Result<$enum, String> {
                $enum::from_name(s)
                    .ok_or_else(|| format!("unknown {} {s:?}: expected {}", $what, $crate::named::or_list(&$enum::names())))
            }
        }

        impl std::fmt::Display for $enum {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl serde::Serialize for $enum {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }

        impl<'de> serde::Deserialize<'de> for $enum {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<$enum, D::Error> {
                let name = <std::borrow::Cow<'de, str> as serde::Deserialize>::deserialize(d)?;
                name.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::or_list;

    crate::named_enum! {
        /// A test choice.
        enum Colour "colour" { Red = "red", DarkBlue = "dark-blue", Green = "green" }
    }

    #[test]
    fn names_round_trip_through_text_and_json() {
        for c in Colour::ALL {
            assert_eq!(c.name().parse::<Colour>(), Ok(*c));
            let json = serde_json::to_string(c).unwrap();
            assert_eq!(json, format!("\"{}\"", c.name()));
            assert_eq!(serde_json::from_str::<Colour>(&json).unwrap(), *c);
        }
        assert_eq!(Colour::default(), Colour::Red);
        assert_eq!(Colour::DarkBlue.to_string(), "dark-blue");
    }

    #[test]
    fn an_unknown_name_is_refused_with_every_accepted_one() {
        let e = "blue".parse::<Colour>().unwrap_err();
        assert_eq!(
            e,
            "unknown colour \"blue\": expected red, dark-blue or green"
        );
        assert!(serde_json::from_str::<Colour>("\"blue\"")
            .unwrap_err()
            .to_string()
            .contains("dark-blue"));
        assert_eq!(or_list(&["a"]), "a");
        assert_eq!(or_list(&["a", "b"]), "a or b");
    }
}
