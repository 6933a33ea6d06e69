package bracketdepth

import "errors"

var closes = map[rune]rune{')': '(', ']': '[', '}': '{'}

// MaxDepth returns how deeply the brackets of text are nested.
func MaxDepth(text string) (int, error) {
	var open []rune
	deepest := 0
	for _, r := range text {
		switch r {
		case '(', '[', '{':
			open = append(open, r)
			if len(open) > deepest {
				deepest = len(open)
			}
		case ')', ']', '}':
			if len(open) == 0 || open[len(open)-1] != closes[r] {
				return 0, errors.New("unmatched closing bracket")
			}
			open = open[:len(open)-1]
		}
	}
	if len(open) > 0 {
		return 0, errors.New("bracket left open")
	}
	return deepest, nil
}
