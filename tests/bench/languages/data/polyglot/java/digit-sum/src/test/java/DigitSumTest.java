import org.junit.jupiter.api.Disabled;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

public class DigitSumTest {

    @Test
    public void zeroHasSumZero() {
        assertThat(DigitSum.of(0)).isEqualTo(0);
    }

    @Disabled("Remove to run test")
    @Test
    public void oneDigitIsItsOwnSum() {
        assertThat(DigitSum.of(7)).isEqualTo(7);
    }

    @Disabled("Remove to run test")
    @Test
    public void severalDigitsAddUp() {
        assertThat(DigitSum.of(9045)).isEqualTo(18);
    }

    @Disabled("Remove to run test")
    @Test
    public void aNegativeNumberHasTheDigitsOfItsAbsoluteValue() {
        assertThat(DigitSum.of(-123)).isEqualTo(6);
    }

    @Disabled("Remove to run test")
    @Test
    public void eighteenIsHarshad() {
        assertThat(DigitSum.isHarshad(18)).isTrue();
    }

    @Disabled("Remove to run test")
    @Test
    public void nineteenIsNotHarshad() {
        assertThat(DigitSum.isHarshad(19)).isFalse();
    }

    @Disabled("Remove to run test")
    @Test
    public void zeroIsNotHarshad() {
        assertThat(DigitSum.isHarshad(0)).isFalse();
    }
}
