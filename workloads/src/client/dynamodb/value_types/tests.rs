//! One test per encoding/decoding rule of `value_types` and per rule of DynamoDB equality.

use super::*;

fn item(pairs: &[(&str, AttributeValue)]) -> HashMap<String, AttributeValue> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

fn val(v: AttributeValue) -> HashMap<String, AttributeValue> {
    item(&[(VALUE_ATTR, v)])
}

fn blob(s: &str) -> Blob {
    Blob::new(s.as_bytes().to_vec())
}

fn unexpected(d: Decoded) -> String {
    match d {
        Decoded::Unexpected(s) => s,
        other => panic!("expected an unexpected value, got {other:?}"),
    }
}

#[test]
fn every_type_decodes_its_own_writes_back_to_their_numbers() {
    for t in ValueType::ALL {
        for n in [1, 2, 17, 999, 123_456_789] {
            assert_eq!(decode(t, &attributes(t, n)), Decoded::Written(n), "{t} {n}");
        }
    }
}

#[test]
fn no_two_writes_of_a_type_have_equal_attributes() {
    for t in ValueType::ALL {
        for (a, b) in [(1, 2), (3, 5), (2, 4), (10, 1010)] {
            assert!(
                !same_item(&attributes(t, a), &attributes(t, b)),
                "{t} {a} {b}"
            );
        }
    }
}

#[test]
fn a_string_is_v_dash_n_and_nothing_else_decodes() {
    assert_eq!(
        attributes(ValueType::S, 7),
        val(AttributeValue::S("v-7".into()))
    );
    let garbage = unexpected(decode(ValueType::S, &val(AttributeValue::S("v-7x".into()))));
    assert_eq!(garbage, r#"{"val":{"S":"v-7x"}}"#);
    assert!(matches!(
        decode(ValueType::S, &val(AttributeValue::S("w-7".into()))),
        Decoded::Unexpected(_)
    ));
}

#[test]
fn a_number_is_compared_by_value_whatever_its_form() {
    for form in ["7", "7.0", "7.000", "0.7e1", "70E-1", "+7", "007"] {
        assert_eq!(
            decode(ValueType::N, &val(AttributeValue::N(form.into()))),
            Decoded::Written(7),
            "{form}"
        );
    }
    for other in ["7.5", "7e-1", "seven", ""] {
        assert!(
            matches!(
                decode(ValueType::N, &val(AttributeValue::N(other.into()))),
                Decoded::Unexpected(_)
            ),
            "{other}"
        );
    }
}

#[test]
fn decimals_have_one_form_per_value() {
    assert!(same_number("1", "1.0") && same_number("100", "1E2") && same_number("0", "-0.00"));
    assert!(same_number("-0.25", "-25e-2"));
    assert!(!same_number("1", "-1") && !same_number("1", "10") && !same_number("0.1", "1"));
    assert!(
        same_number("x", "x") && !same_number("x", "y"),
        "text that is not a number"
    );
    assert_eq!(Decimal::parse("12.50").and_then(|d| d.to_i64()), None);
    assert_eq!(Decimal::parse("1200e-2").and_then(|d| d.to_i64()), Some(12));
    assert_eq!(
        Decimal::parse("1e30").and_then(|d| d.to_i64()),
        None,
        "out of range"
    );
    for bad in ["", "-", ".", "1e", "1.2.3", "1e2.5", "0x10"] {
        assert_eq!(Decimal::parse(bad), None, "{bad}");
    }
}

#[test]
fn binary_is_compared_by_bytes() {
    assert_eq!(
        decode(ValueType::B, &val(AttributeValue::B(blob("v-4")))),
        Decoded::Written(4)
    );
    let garbage = unexpected(decode(ValueType::B, &val(AttributeValue::B(blob("v-4\0")))));
    assert_eq!(
        garbage, r#"{"val":{"B":"762d3400"}}"#,
        "binary is described in hex"
    );
    assert!(
        matches!(
            decode(ValueType::B, &val(AttributeValue::S("v-4".into()))),
            Decoded::Unexpected(_)
        ),
        "a string is not binary"
    );
}

#[test]
fn a_boolean_must_be_the_parity_of_its_write_number() {
    let odd = attributes(ValueType::Bool, 3);
    assert_eq!(odd[VALUE_ATTR], AttributeValue::Bool(true));
    assert_eq!(decode(ValueType::Bool, &odd), Decoded::Written(3));
    let wrong = item(&[
        (VALUE_ATTR, AttributeValue::Bool(false)),
        (WRITE_ATTR, AttributeValue::N("3".into())),
    ]);
    assert!(matches!(
        decode(ValueType::Bool, &wrong),
        Decoded::Unexpected(_)
    ));
    let no_number = val(AttributeValue::Bool(true));
    assert!(matches!(
        decode(ValueType::Bool, &no_number),
        Decoded::Unexpected(_)
    ));
}

#[test]
fn a_null_carries_its_write_number_beside_it() {
    assert_eq!(
        decode(ValueType::Null, &attributes(ValueType::Null, 8)),
        Decoded::Written(8)
    );
    let not_null = item(&[
        (VALUE_ATTR, AttributeValue::S("x".into())),
        (WRITE_ATTR, AttributeValue::N("8".into())),
    ]);
    assert!(matches!(
        decode(ValueType::Null, &not_null),
        Decoded::Unexpected(_)
    ));
    let missing = item(&[(WRITE_ATTR, AttributeValue::N("8".into()))]);
    assert!(matches!(
        decode(ValueType::Null, &missing),
        Decoded::Unexpected(_)
    ));
}

#[test]
fn sets_are_unordered_and_must_hold_exactly_their_members() {
    let reversed = val(AttributeValue::Ss(vec!["w-5".into(), "v-5".into()]));
    assert_eq!(decode(ValueType::Ss, &reversed), Decoded::Written(5));
    let extra = val(AttributeValue::Ss(vec![
        "v-5".into(),
        "w-5".into(),
        "w-6".into(),
    ]));
    assert!(matches!(
        decode(ValueType::Ss, &extra),
        Decoded::Unexpected(_)
    ));
    let mixed = val(AttributeValue::Ss(vec!["v-5".into(), "w-6".into()]));
    assert!(matches!(
        decode(ValueType::Ss, &mixed),
        Decoded::Unexpected(_)
    ));
    let bs = val(AttributeValue::Bs(vec![blob("w-5"), blob("v-5")]));
    assert_eq!(decode(ValueType::Bs, &bs), Decoded::Written(5));
    let bs_short = val(AttributeValue::Bs(vec![blob("v-5")]));
    assert!(matches!(
        decode(ValueType::Bs, &bs_short),
        Decoded::Unexpected(_)
    ));
}

#[test]
fn number_sets_compare_members_by_value_in_any_order() {
    let forms = val(AttributeValue::Ns(vec!["1005.0".into(), "5".into()]));
    assert_eq!(decode(ValueType::Ns, &forms), Decoded::Written(5));
    let off = val(AttributeValue::Ns(vec!["5".into(), "1006".into()]));
    assert!(matches!(
        decode(ValueType::Ns, &off),
        Decoded::Unexpected(_)
    ));
    assert!(same(
        &AttributeValue::Ns(vec!["1".into(), "2.0".into()]),
        &AttributeValue::Ns(vec!["2".into(), "1.00".into()])
    ));
}

#[test]
fn lists_are_ordered_and_compared_element_by_element() {
    let l = |a: &str, b: &str| {
        val(AttributeValue::L(vec![
            AttributeValue::N(a.into()),
            AttributeValue::N(b.into()),
        ]))
    };
    assert_eq!(decode(ValueType::L, &l("9", "10.0")), Decoded::Written(9));
    assert!(
        matches!(decode(ValueType::L, &l("10", "9")), Decoded::Unexpected(_)),
        "order matters"
    );
    let long = val(AttributeValue::L(vec![
        AttributeValue::N("9".into()),
        AttributeValue::N("10".into()),
        AttributeValue::N("11".into()),
    ]));
    assert!(matches!(
        decode(ValueType::L, &long),
        Decoded::Unexpected(_)
    ));
}

#[test]
fn maps_are_compared_by_key() {
    let m = |pairs: &[(&str, &str)]| {
        val(AttributeValue::M(
            pairs
                .iter()
                .map(|(k, n)| (k.to_string(), AttributeValue::N(n.to_string())))
                .collect(),
        ))
    };
    assert_eq!(
        decode(ValueType::M, &m(&[("b", "3"), ("a", "2")])),
        Decoded::Written(2)
    );
    assert!(matches!(
        decode(ValueType::M, &m(&[("a", "2"), ("b", "4")])),
        Decoded::Unexpected(_)
    ));
    assert!(matches!(
        decode(ValueType::M, &m(&[("a", "2"), ("b", "3"), ("c", "0")])),
        Decoded::Unexpected(_)
    ));
}

#[test]
fn a_value_of_another_type_or_an_extra_attribute_is_unexpected() {
    let n_as_string = val(AttributeValue::S("3".into()));
    assert!(matches!(
        decode(ValueType::N, &n_as_string),
        Decoded::Unexpected(_)
    ));
    let mut extra = attributes(ValueType::S, 3);
    extra.insert("other".into(), AttributeValue::Bool(true));
    assert_eq!(
        unexpected(decode(ValueType::S, &extra)),
        r#"{"other":{"BOOL":true},"val":{"S":"v-3"}}"#
    );
    assert!(
        matches!(
            decode(ValueType::S, &HashMap::new()),
            Decoded::Unexpected(_)
        ),
        "no val"
    );
}

#[test]
fn value_types_parse_by_dynamodb_name_and_spread_all_over_the_keys() {
    assert_eq!(
        "bool".parse::<ValueTypes>(),
        Ok(ValueTypes::One(ValueType::Bool))
    );
    assert_eq!(
        "SS".parse::<ValueTypes>(),
        Ok(ValueTypes::One(ValueType::Ss))
    );
    assert_eq!("all".parse::<ValueTypes>(), Ok(ValueTypes::All));
    assert!("string".parse::<ValueTypes>().is_err());
    for t in ValueTypes::All.types() {
        assert_eq!(t.to_string().parse::<ValueTypes>(), Ok(ValueTypes::One(t)));
    }
    assert_eq!(ValueTypes::All.of_key("reg/00000"), ValueType::S);
    assert_eq!(ValueTypes::All.of_key("reg/00013"), ValueType::Bool);
    assert_eq!(
        ValueTypes::One(ValueType::M).of_key("reg/00013"),
        ValueType::M
    );
    let spread: BTreeSet<ValueType> = (0..10)
        .map(|i| ValueTypes::All.of_key(&format!("reg/{i:05}")))
        .collect();
    assert_eq!(spread.len(), 10);
    let tables: BTreeSet<&str> = ValueType::ALL.iter().map(|t| t.table()).collect();
    assert_eq!(tables.len(), 10, "one table per type");
}
