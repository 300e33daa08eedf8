// A softmax-regression classifier trained with minibatch SGD: small enough to
// read in one sitting, real enough to show a loss going down and an accuracy
// on held-out data. Not thread-safe; a value type.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "spool/core/status.h"

namespace spool::samples {

class SoftmaxModel {
 public:
  SoftmaxModel(int inputs, int classes);

  // One SGD step on a batch (rows of `inputs` features, labels in
  // [0, classes)); returns the batch's mean cross-entropy before the step.
  double TrainStep(std::span<const float> features, std::span<const int> labels, double learning_rate);
  int Predict(std::span<const float> row) const;

  // The weights as raw little-endian floats with a small header, so a
  // restored model continues bit for bit.
  std::string Serialize() const;
  static Result<SoftmaxModel> Deserialize(std::string_view bytes);

  int inputs() const { return inputs_; }
  int classes() const { return classes_; }

 private:
  // Fills `probabilities` (classes_) for one row.
  void Forward(const float* row, std::vector<double>& probabilities) const;

  int inputs_;
  int classes_;
  std::vector<float> weights_;  // classes_ x (inputs_ + 1): the last column is the bias
};

}  // namespace spool::samples
