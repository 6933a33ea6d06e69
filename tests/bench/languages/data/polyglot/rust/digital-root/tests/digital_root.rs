use digital_root::*;

#[test]
fn zero_has_root_zero() {
    assert_eq!(digital_root(0), 0);
}

#[test]
#[ignore]
fn one_digit_is_its_own_root() {
    assert_eq!(digital_root(7), 7);
}

#[test]
#[ignore]
fn two_rounds_of_sums() {
    assert_eq!(digital_root(38), 2);
}

#[test]
#[ignore]
fn the_largest_number() {
    assert_eq!(digital_root(u64::MAX), 6);
}

#[test]
#[ignore]
fn harshad_numbers() {
    assert!(is_harshad(18));
    assert!(is_harshad(1729));
}

#[test]
#[ignore]
fn not_harshad_numbers() {
    assert!(!is_harshad(19));
    assert!(!is_harshad(0));
}
