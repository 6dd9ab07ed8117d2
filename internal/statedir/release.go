package statedir

import (
	"strconv"
	"strings"
)

// WrittenBy says which release wrote a file, from the format mark it holds
// (a magic such as MCPSAGG3, or a version such as 2 or 4.7) and the one this
// router writes: "a newer release" or "an older release" when the marks
// differ only in their numbers, "another release" when they cannot be
// ordered, and "another program" for a mark that is no router's. Messages
// about a file of another format use it, so that after a rollback the log
// says the state folder is a newer release's.
func WrittenBy(got, want string) string {
	gp, gn := splitMark(got)
	wp, wn := splitMark(want)
	if gp != wp {
		if strings.HasPrefix(got, "MCPSAG") || gn != nil && wn != nil && gp == "" && wp == "" {
			return "another release"
		}
		return "another program"
	}
	if gn == nil || wn == nil {
		return "another release"
	}
	for i := range max(len(gn), len(wn)) {
		g, w := at(gn, i), at(wn, i)
		switch {
		case g > w:
			return "a newer release"
		case g < w:
			return "an older release"
		}
	}
	return "another release"
}

// splitMark splits a mark into its letters and the dot-separated numbers
// that end it: MCPSAGG3 is MCPSAGG and 3, "4.7" is "" and 4, 7. A mark
// without numbers has none.
func splitMark(s string) (string, []int) {
	i := len(s)
	for i > 0 && (s[i-1] >= '0' && s[i-1] <= '9' || s[i-1] == '.') {
		i--
	}
	var nums []int
	for part := range strings.SplitSeq(s[i:], ".") {
		n, err := strconv.Atoi(part)
		if err != nil {
			return s, nil
		}
		nums = append(nums, n)
	}
	return s[:i], nums
}

func at(nums []int, i int) int {
	if i < len(nums) {
		return nums[i]
	}
	return 0
}
