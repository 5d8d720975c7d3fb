// --print-ir-after-all and --time-passes write to stderr; stdout keeps only
// the final IR.
// RUN: irkit-opt %s -p canonicalize,cse --print-ir-after-all --time-passes -o %t 2> %t.err
// RUN: filecheck %s --input-file %t.err --check-prefix=ERR
// RUN: filecheck %s --input-file %t --check-prefix=OUT

func.func @f(%a: i32) -> i32 {
  %c0 = arith.constant 0 : i32
  %x = arith.addi %a, %c0 : i32
  %y = arith.addi %a, %c0 : i32
  %z = arith.addi %x, %y : i32
  func.return %z : i32
}

// ERR:      // -----// IR after canonicalize //----- //
// ERR:      func.func @f
// ERR:      // -----// IR after cse //----- //
// ERR:      irkit-opt timing report
// ERR-NEXT: seconds  step
// ERR-NEXT: parse
// ERR-NEXT: pass canonicalize
// ERR-NEXT: pass cse
// ERR-NEXT: verify
// ERR-NEXT: print
// ERR-NEXT: total

// OUT-NOT:  IR after
// OUT:      func.func @f(%{{.*}}: i32) -> i32 {
// OUT-NEXT:   %{{.*}} = arith.addi %{{.*}}, %{{.*}} : i32
// OUT-NOT:  timing
