module bracketdepth

go 1.18
