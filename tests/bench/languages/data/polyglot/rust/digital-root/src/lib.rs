pub fn digital_root(n: u64) -> u64 {
    todo!("the digital root of {n}")
}

pub fn is_harshad(n: u64) -> bool {
    todo!("whether {n} is divisible by its digit sum")
}
