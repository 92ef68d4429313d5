package wire

import "time"

// FormatRangeTime writes t as TimeLayout does for a UTC time
// ("2006-01-02T15:04:05.000Z"), by hand: time.Format is one of the largest
// functions in the WebAssembly build, and a page's first lease paid
// milliseconds to compile and run it.
func FormatRangeTime(t time.Time) string {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.Format(TimeLayout)
	}
	hour, minute, sec := t.Clock()
	milli := t.Nanosecond() / 1e6
	var b [24]byte
	put := func(at, n, width int) {
		for i := at + width - 1; i >= at; i-- {
			b[i] = byte('0' + n%10)
			n /= 10
		}
	}
	put(0, year, 4)
	b[4] = '-'
	put(5, int(month), 2)
	b[7] = '-'
	put(8, day, 2)
	b[10] = 'T'
	put(11, hour, 2)
	b[13] = ':'
	put(14, minute, 2)
	b[16] = ':'
	put(17, sec, 2)
	b[19] = '.'
	put(20, milli, 3)
	b[23] = 'Z'
	return string(b[:])
}

// ParseRangeTime reads a time as FormatRangeTime writes it, and any other
// RFC 3339 time through time.Parse; ok is false for anything else.
func ParseRangeTime(s string) (t time.Time, ok bool) {
	if len(s) == 24 && s[4] == '-' && s[7] == '-' && s[10] == 'T' && s[13] == ':' && s[16] == ':' && s[19] == '.' && s[23] == 'Z' {
		n := func(from, to int) int {
			v := 0
			for i := from; i < to; i++ {
				c := s[i]
				if c < '0' || c > '9' {
					return -1
				}
				v = v*10 + int(c-'0')
			}
			return v
		}
		year, month, day := n(0, 4), n(5, 7), n(8, 10)
		hour, minute, sec, milli := n(11, 13), n(14, 16), n(17, 19), n(20, 23)
		if year >= 0 && month >= 1 && month <= 12 && day >= 1 && day <= 31 && hour >= 0 && hour < 24 && minute >= 0 && minute < 60 && sec >= 0 && sec < 60 && milli >= 0 {
			t := time.Date(year, time.Month(month), day, hour, minute, sec, milli*1e6, time.UTC)
			if t.Day() == day { // not 31 February
				return t, true
			}
		}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}
