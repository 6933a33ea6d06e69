import pytest

from bike_rental import receipt, rental_price, started_hours


class TestStartedHours:
    def test_a_started_hour_counts_whole(self):
        assert started_hours(61) == 2


class TestRentalPrice:
    def test_one_started_hour(self):
        assert rental_price(1) == 300

    def test_the_day_is_capped(self):
        assert rental_price(600) == 2000

    def test_members_pay_less(self):
        assert rental_price(95, member=True) == 540

    def test_nothing_rented_is_refused(self):
        with pytest.raises(ValueError):
            rental_price(0)


class TestReceipt:
    def test_a_receipt_line(self):
        assert receipt(95) == "95 min: 6.00 EUR"
