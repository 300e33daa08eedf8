// tf.train.Example for the bindings: feature specs given from Python, and
// batches of Examples decoded into a dict of NumPy arrays by such a spec
// (spool/records/feature_spec.h does the decoding, in C++, with the GIL
// released while it fills the arrays; no Python object is made per value,
// except for bytes features, which are lists of bytes).
//
// Call with the GIL held.
#pragma once

#include <pybind11/pybind11.h>

#include <span>
#include <vector>

#include "spool/records/example.pb.h"
#include "spool/records/feature_spec.h"

namespace spool::python {

// `features`: a list of (name, dtype, shape, default) tuples, as
// spool/loader.py builds them; InvalidArgument (ValueError) for a bad spec.
std::vector<records::FeatureSpec> FeatureSpecsFrom(const pybind11::list& features);

// {name: array of shape (len(examples), *shape)}, or for bytes features a
// list of bytes (shape ()) or of lists of bytes.
pybind11::dict DecodeExamples(std::span<const tensorflow::Example> examples,
                              const std::vector<records::FeatureSpec>& specs);


}  // namespace spool::python
