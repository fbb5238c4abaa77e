#pragma once
// strftime_now's clock in the Jinja reference data (make_template_reference.py's FIXED_NOW and
// make_jinja_cases.py): 2024-07-26 10:30:00, a Friday.
#include <ctime>

inline std::tm jinja_reference_time() {
    std::tm tm{};
    tm.tm_year = 124;
    tm.tm_mon = 6;
    tm.tm_mday = 26;
    tm.tm_hour = 10;
    tm.tm_min = 30;
    tm.tm_wday = 5;
    tm.tm_yday = 207;
    return tm;
}
