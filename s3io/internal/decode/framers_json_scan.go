package decode

import "fmt"

// The json-array framer's states, one method each (or one for a few states alike), in the
// manner of encoding/json's scanner. A method starts at data[i] in its state (i may be
// len(data) when another method scans on into it) and scans as far as its token goes: it
// returns the index where it stopped and the state there, which is its own when the data
// ran out, or a pseudo-state (jSplit, jDone) for Frame to act on. Errors come back with
// index and state zero.
//
// The loops over a token's bytes stay inside the methods, so that a call is per token,
// not per byte. A method also calls the next state's method itself where nothing can
// happen in between that Frame must see, so that most tokens cost no trip back through
// Frame's dispatch. Those calls only go forward, from punctuation into the key or value
// after it and from a string into its escapes, never from a value back into punctuation,
// so their depth is bounded however long the data is.

// skipSpace returns the index of the first byte at or after i that is not JSON
// whitespace, or len(data).
func skipSpace(data []byte, i int) int {
	for i < len(data) && jsonSpace[data[i]] {
		i++
	}
	return i
}

// scanTop scans before a top-level value (st jTop), which must open with '[' or '{'.
func (f *jsonArrayFramer) scanTop(data []byte, i int) (int, uint8, error) {
	if i = skipSpace(data, i); i == len(data) {
		return i, jTop, nil
	}
	c := data[i]
	switch c {
	case '[':
		f.target = 1
		f.stack = append(f.stack[:0], c)
		return i + 1, jValueOrEnd, nil
	case '{':
		f.found = false
		f.stack = append(f.stack[:0], c)
		return i + 1, jKeyOrEnd, nil
	}
	return 0, 0, f.corrupt(i, "'[' or '{' at the top level", c)
}

// scanValue scans before a value: after '[' (st jValueOrEnd, where ']' may close the array
// instead), or after an array's ',' or an object's ':' (st jValue). It starts the value at
// its first byte, and scans on into it when it is a string or a number.
func (f *jsonArrayFramer) scanValue(data []byte, i int, st uint8) (int, uint8, error) {
	if i = skipSpace(data, i); i == len(data) {
		return i, st, nil
	}
	c := data[i]
	if c == ']' && st == jValueOrEnd {
		return f.closeContainer(i), jDone, nil
	}
	d := len(f.stack)
	if d == f.target && !f.inRecord {
		if i > 0 {
			// Consume what precedes the record, so that it starts the next call's
			// data and its offset is its first byte.
			f.state = st
			return i, jSplit, nil
		}
		f.inRecord = true
	}
	switch {
	case c == '"':
		f.key = false
		return f.scanString(data, i+1)
	case c == '{' || c == '[':
		return f.openContainer(data, i, c, d)
	case c == '-':
		return f.scanNumber(data, i+1, jNumMinus)
	case c == '0':
		return f.scanNumber(data, i+1, jNumZero)
	case c >= '1' && c <= '9':
		return f.scanNumber(data, i+1, jNumInt)
	case c == 't' || c == 'f' || c == 'n':
		return f.startLiteral(data, i, c)
	}
	if st == jValueOrEnd {
		return 0, 0, f.corrupt(i, "a value or ']' after '['", c)
	}
	return 0, 0, f.corrupt(i, "a value", c)
}

// openContainer opens the object or array whose '{' or '[', c, is data[i], at depth d
// before it, and chooses an array as the one whose elements are records when it is the
// top-level object's first array-valued member. It scans on into an object's first key.
func (f *jsonArrayFramer) openContainer(data []byte, i int, c byte, d int) (int, uint8, error) {
	if d >= jsonMaxDepth {
		return 0, 0, f.corrupt(i, fmt.Sprintf("nesting at most %d deep", jsonMaxDepth), c)
	}
	f.stack = append(f.stack, c)
	if c == '{' {
		return f.scanKey(data, i+1, jKeyOrEnd)
	}
	if d == 1 && !f.found && f.stack[0] == '{' {
		// The top-level object's first array-valued member.
		f.target, f.found = 2, true
	}
	return i + 1, jValueOrEnd, nil
}

// closeContainer closes the innermost container, whose closing byte is data[i] and of the
// kind its caller checked, and returns the index after it. Closing the chosen array leaves
// no array chosen.
func (f *jsonArrayFramer) closeContainer(i int) int {
	d := len(f.stack)
	f.stack = f.stack[:d-1]
	if d == f.target {
		f.target = 0
	}
	return i + 1
}

// valueDone returns the state after a value that just ended, and whether that value was a
// record, an element of the chosen array.
func (f *jsonArrayFramer) valueDone() (uint8, bool) {
	d := len(f.stack)
	if d == 0 {
		return jTop, false
	}
	return jCommaOrEnd, d == f.target && f.inRecord
}

// scanCommaOrEnd scans after a value in a container (st jCommaOrEnd): a ',' before the
// next element or member, which it scans on into, or the byte that closes the container.
// The closed container is a value that ended in its own container, so the scan goes on
// after it here, unless it was a record or a top-level value, whose end Frame must see.
func (f *jsonArrayFramer) scanCommaOrEnd(data []byte, i int) (int, uint8, error) {
	for {
		if i = skipSpace(data, i); i == len(data) {
			return i, jCommaOrEnd, nil
		}
		c, top := data[i], f.stack[len(f.stack)-1]
		if c == ',' {
			if top == '{' {
				return f.scanKey(data, i+1, jKey)
			}
			return f.scanValue(data, i+1, jValue)
		}
		if top == '{' {
			if c != '}' {
				return 0, 0, f.corrupt(i, "',' or '}' after an object member", c)
			}
		} else if c != ']' {
			if len(f.stack) == f.target {
				return 0, 0, f.corrupt(i, "',' or ']' after an array element", c)
			}
			return 0, 0, f.corrupt(i, "',' or ']' after an array value", c)
		}
		i = f.closeContainer(i)
		if st, rec := f.valueDone(); st == jTop || rec {
			return i, jDone, nil
		}
	}
}

// scanKey scans before an object's key: after '{' (st jKeyOrEnd, where '}' may close the
// object instead) or after a ',' between members (st jKey). It scans on into the key.
func (f *jsonArrayFramer) scanKey(data []byte, i int, st uint8) (int, uint8, error) {
	if i = skipSpace(data, i); i == len(data) {
		return i, st, nil
	}
	c := data[i]
	if c == '"' {
		f.key = true
		return f.scanString(data, i+1)
	}
	if st == jKeyOrEnd {
		if c == '}' {
			return f.closeContainer(i), jDone, nil
		}
		return 0, 0, f.corrupt(i, "a string key or '}' after '{'", c)
	}
	return 0, 0, f.corrupt(i, "a string key after ',' in an object", c)
}

// scanColon scans between an object member's key and its value (st jColon), and on into
// the value.
func (f *jsonArrayFramer) scanColon(data []byte, i int) (int, uint8, error) {
	if i = skipSpace(data, i); i == len(data) {
		return i, jColon, nil
	}
	if c := data[i]; c != ':' {
		return 0, 0, f.corrupt(i, "':' after an object key", c)
	}
	return f.scanValue(data, i+1, jValue)
}

// scanString scans inside a string (st jString; f.key tells whether it is an object key)
// to its closing quote, and through escapes. It goes on through the commonest sequences
// of compact JSON, so that one call covers a run of an object's string members.
// stringSpecial's word-at-a-time scan finds the byte where it has to look.
func (f *jsonArrayFramer) scanString(data []byte, i int) (int, uint8, error) {
	for {
		j := stringSpecial(data, i)
		if j == len(data) {
			return j, jString, nil
		}
		switch data[j] {
		case '"':
			i = j + 1
			// Fast paths for the commonest sequences of compact JSON, `"key":"`,
			// `"key":{"key` and `","key`, which neither begin nor end a record: a
			// record is an element of an array, and these are an object's members
			// and keys. They save the calls through scanColon, scanValue,
			// openContainer and scanKey; the nesting limit is theirs to report.
			if f.key {
				if i+1 < len(data) && data[i] == ':' && data[i+1] == '"' {
					f.key = false
					i += 2
					continue
				}
				if i+2 < len(data) && data[i] == ':' && data[i+1] == '{' && data[i+2] == '"' && len(f.stack) < jsonMaxDepth {
					f.stack = append(f.stack, '{')
					i += 3
					continue
				}
				return i, jColon, nil
			}
			if i+1 < len(data) && data[i] == ',' && data[i+1] == '"' && f.stack[len(f.stack)-1] == '{' {
				f.key = true
				i += 2
				continue
			}
			return i, jDone, nil
		case '\\':
			var st uint8
			var err error
			if i, st, err = f.scanEscape(data, j+1, jEscape); st != jString || err != nil {
				return i, st, err
			}
			continue
		}
		return 0, 0, f.corrupt(j, "a control character in a string to be escaped", data[j])
	}
}

// scanEscape scans an escape in a string: the byte after its backslash (st jEscape) and
// then, for \u, its hex digits (st jHex, with f.hex of them still to come).
func (f *jsonArrayFramer) scanEscape(data []byte, i int, st uint8) (int, uint8, error) {
	if st == jEscape {
		if i == len(data) {
			return i, jEscape, nil
		}
		switch c := data[i]; c {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			return i + 1, jString, nil
		case 'u':
			f.hex = 4
			i++
		default:
			return 0, 0, f.corrupt(i, `an escape (one of "\/bfnrtu) after a backslash`, c)
		}
	}
	for ; i < len(data); i++ {
		if c := data[i]; !jsonHex[c] {
			return 0, 0, f.corrupt(i, `a hex digit in a \u escape`, c)
		}
		if f.hex--; f.hex == 0 {
			return i + 1, jString, nil
		}
	}
	return i, jHex, nil
}

// startLiteral starts true, false or null, whose first byte c is data[i]: at once when
// the data holds all of it, else byte by byte, as the data may split it.
func (f *jsonArrayFramer) startLiteral(data []byte, i int, c byte) (int, uint8, error) {
	lit := "null"
	if c == 't' {
		lit = "true"
	} else if c == 'f' {
		lit = "false"
	}
	if len(data)-i >= len(lit) && string(data[i:i+len(lit)]) == lit {
		return i + len(lit), jDone, nil
	}
	f.lit = lit[1:]
	return f.scanLiteral(data, i+1)
}

// scanLiteral scans inside true, false or null (st jLiteral), whose bytes still to come
// are f.lit.
func (f *jsonArrayFramer) scanLiteral(data []byte, i int) (int, uint8, error) {
	for ; i < len(data); i++ {
		if c := data[i]; c != f.lit[0] {
			return 0, 0, f.corrupt(i, fmt.Sprintf("%q to continue a literal (true, false, null)", f.lit[0]), c)
		}
		if f.lit = f.lit[1:]; f.lit == "" {
			return i + 1, jDone, nil
		}
	}
	return i, jLiteral, nil
}

// scanNumber scans inside a number, in the number state st, as far as the number goes:
// the byte that ends it is not part of it, and is scanned next as what follows a value.
// The runs of digits are scanned in a loop of their own.
func (f *jsonArrayFramer) scanNumber(data []byte, i int, st uint8) (int, uint8, error) {
	for i < len(data) {
		c := data[i]
		switch st {
		case jNumMinus:
			if c == '0' {
				st = jNumZero
			} else if c >= '1' && c <= '9' {
				st = jNumInt
			} else {
				return 0, 0, f.corrupt(i, "a digit after a number's '-'", c)
			}
		case jNumZero, jNumInt, jNumFrac, jNumExp:
			if st != jNumZero {
				for c >= '0' && c <= '9' {
					if i++; i == len(data) {
						return i, st, nil
					}
					c = data[i]
				}
			}
			if c == '.' && (st == jNumZero || st == jNumInt) {
				st = jNumDot
			} else if (c == 'e' || c == 'E') && st != jNumExp {
				st = jNumE
			} else {
				return i, jDone, nil // c ends the number and is scanned next
			}
		case jNumDot:
			if c < '0' || c > '9' {
				return 0, 0, f.corrupt(i, "a digit after a number's '.'", c)
			}
			st = jNumFrac
		case jNumE:
			if c == '+' || c == '-' {
				st = jNumESign
			} else if c >= '0' && c <= '9' {
				st = jNumExp
			} else {
				return 0, 0, f.corrupt(i, "a digit or sign in a number's exponent", c)
			}
		case jNumESign:
			if c < '0' || c > '9' {
				return 0, 0, f.corrupt(i, "a digit in a number's exponent", c)
			}
			st = jNumExp
		}
		i++
	}
	return i, st, nil
}
