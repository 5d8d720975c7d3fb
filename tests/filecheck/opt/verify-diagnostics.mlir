// Verifier errors, pass failures and parse errors checked with
// expected-* annotations, one case per chunk.
// RUN: irkit-opt %s --split-input-file --verify-diagnostics -p check-design
//
// An op carrying a location in another file (here the document it came
// from) is matched on the line where the op is written in this input.

builtin.module {
  design.design "d" {
    design.schedule "b" {
      // expected-error@+1 {{split factor must be positive, got 0}}
      design.split "i" by 0 -> "io", "ii" loc("x.design":3:5)
    } loc("x.design":2:3)
  } loc("x.design":1:1)
}

// -----

// An op without a location is reported where it is written.
builtin.module {
  design.design "d" {
    design.schedule "b" {
      design.unroll "i" by -2 // expected-error {{unroll factor must be positive, got -2}}
    }
  }
}

// -----

// Trait verification: a schedule directive outside a schedule.
// expected-error@below {{'design.parallel' expects parent op 'design.schedule'}}
design.parallel "i"

// -----

// A failing pass: the checker's diagnostics point at the document; they are
// matched on the lines of the ops that carry those locations.
builtin.module {
  design.design "d" {
    design.size "N" = 8 loc("y.design":2:3)
    // expected-error@+1 {{undefined size 'Q' in the shape of 'a'}}
    design.tensor "a" : "f32" ["N", "Q"] "input" loc("y.design":3:3)
    design.tensor "b" : "f32" ["N"] "output" loc("y.design":4:3)
    design.stmt "b" ["i"] "=" {
      %0 = design.read "a" ["i", "i"] : f32 loc("y.design":5:10)
      design.yield %0 : f32 loc("y.design":5:10)
    } loc("y.design":5:3)
  } loc("y.design":1:1)
}

// -----

// Parse errors are located where the parser stopped.
builtin.module {
  design.schedule "b" {
    // expected-error@+1 {{Expected integer literal}}
    design.split "i" by x -> "io", "ii"
  }
}
