class DigitSum {

    static int of(long number) {
        int sum = 0;
        for (long rest = Math.abs(number); rest > 0; rest /= 10) {
            sum += (int) (rest % 10);
        }
        return sum;
    }

    static boolean isHarshad(long number) {
        return number > 0 && number % of(number) == 0;
    }
}
