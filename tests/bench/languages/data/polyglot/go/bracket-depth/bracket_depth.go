package bracketdepth

// MaxDepth returns how deeply the brackets of text are nested.
func MaxDepth(text string) (int, error) {
	return 0, nil
}
