* golden test: 10 variables (4 integer), 7 constraints
NAME  golden_test
OBJSENSE
    MAX
ROWS
 N  obj
 L  cap
 G  rng
 E  eq
 G  cap_2
 L  c4
 G  obj_2
 L  half
COLUMNS
    MARKER  'MARKER'  'INTORG'
    x  obj  3
    x  cap  2
    x  rng  1
    x  obj_2  1
    MARKER  'MARKER'  'INTEND'
    long_name_1_  obj  2
    long_name_1_  cap  1
    long_name_1_  eq  1
    z  obj  -1
    z  rng  1
    z  eq  1
    z  half  1e-07
    MARKER  'MARKER'  'INTORG'
    _e1  obj  4
    _e1  cap  1
    _e1  cap_2  1
    _e1_2  obj  -1
    _e1_2  cap_2  1
    _3count  obj  0.5
    _3count  rng  1
    MARKER  'MARKER'  'INTEND'
    free_  c4  1
    x7  obj  1
    x7  eq  -1
    x7  obj_2  -1
    unused  obj  0
    neg  obj  1
    neg  c4  1
RHS
    RHS  obj  -10
    RHS  cap  7.5
    RHS  rng  1
    RHS  eq  2
    RHS  cap_2  1
    RHS  obj_2  -10
    RHS  half  1e+06
RANGES
    RNG  rng  4
BOUNDS
 LO  BND  x  0
 PL  BND  x
 UP  BND  long_name_1_  1.5
 FR  BND  z
 BV  BND  _e1
 BV  BND  _e1_2
 LO  BND  _3count  -5
 UP  BND  _3count  5
 FX  BND  free_  2
 LO  BND  x7  -3
 MI  BND  neg
 UP  BND  neg  -1
ENDATA
