fn digit_sum(mut n: u64) -> u64 {
    let mut sum = 0;
    while n > 0 {
        sum += n % 10;
        n /= 10;
    }
    sum
}

pub fn digital_root(n: u64) -> u64 {
    let mut n = n;
    while n >= 10 {
        n = digit_sum(n);
    }
    n
}

pub fn is_harshad(n: u64) -> bool {
    n > 0 && n % digit_sum(n) == 0
}
