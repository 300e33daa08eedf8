#include "samples/train_loop/softmax_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace spool::samples {
namespace {
constexpr char kMagic[8] = {'s', 'o', 'f', 't', 'm', 'a', 'x', '1'};
}  // namespace

SoftmaxModel::SoftmaxModel(int inputs, int classes)
    : inputs_(inputs), classes_(classes), weights_(static_cast<size_t>(classes) * (inputs + 1), 0.0f) {}

void SoftmaxModel::Forward(const float* row, std::vector<double>& probabilities) const {
  probabilities.assign(classes_, 0.0);
  double max_logit = -INFINITY;
  for (int c = 0; c < classes_; ++c) {
    const float* w = &weights_[static_cast<size_t>(c) * (inputs_ + 1)];
    double logit = w[inputs_];
    for (int i = 0; i < inputs_; ++i) logit += static_cast<double>(w[i]) * row[i];
    probabilities[c] = logit;
    max_logit = std::max(max_logit, logit);
  }
  double total = 0;
  for (double& p : probabilities) total += (p = std::exp(p - max_logit));
  for (double& p : probabilities) p /= total;
}

double SoftmaxModel::TrainStep(std::span<const float> features, std::span<const int> labels, double learning_rate) {
  const size_t rows = labels.size();
  if (rows == 0) return 0;
  std::vector<double> gradient(weights_.size(), 0.0);
  std::vector<double> probabilities;
  double loss = 0;
  for (size_t r = 0; r < rows; ++r) {
    const float* row = &features[r * inputs_];
    Forward(row, probabilities);
    loss -= std::log(std::max(probabilities[labels[r]], 1e-12));
    for (int c = 0; c < classes_; ++c) {
      const double error = probabilities[c] - (c == labels[r] ? 1.0 : 0.0);
      double* g = &gradient[static_cast<size_t>(c) * (inputs_ + 1)];
      for (int i = 0; i < inputs_; ++i) g[i] += error * row[i];
      g[inputs_] += error;
    }
  }
  const double scale = learning_rate / static_cast<double>(rows);
  for (size_t i = 0; i < weights_.size(); ++i) weights_[i] -= static_cast<float>(scale * gradient[i]);
  return loss / static_cast<double>(rows);
}

int SoftmaxModel::Predict(std::span<const float> row) const {
  std::vector<double> probabilities;
  Forward(row.data(), probabilities);
  return static_cast<int>(std::max_element(probabilities.begin(), probabilities.end()) - probabilities.begin());
}

std::string SoftmaxModel::Serialize() const {
  std::string out(kMagic, sizeof kMagic);
  const int32_t shape[2] = {inputs_, classes_};
  out.append(reinterpret_cast<const char*>(shape), sizeof shape);
  out.append(reinterpret_cast<const char*>(weights_.data()), weights_.size() * sizeof(float));
  return out;
}

Result<SoftmaxModel> SoftmaxModel::Deserialize(std::string_view bytes) {
  int32_t shape[2];
  if (bytes.size() < sizeof kMagic + sizeof shape || bytes.substr(0, sizeof kMagic) != std::string_view(kMagic, 8)) {
    return DataLossError("model file is not a softmax model (bad header)");
  }
  std::memcpy(shape, bytes.data() + sizeof kMagic, sizeof shape);
  SoftmaxModel model(shape[0], shape[1]);
  const std::string_view weights = bytes.substr(sizeof kMagic + sizeof shape);
  if (shape[0] <= 0 || shape[1] <= 0 || weights.size() != model.weights_.size() * sizeof(float)) {
    return DataLossError("model file has " + std::to_string(weights.size()) + " weight bytes, expected " +
                         std::to_string(model.weights_.size() * sizeof(float)));
  }
  std::memcpy(model.weights_.data(), weights.data(), weights.size());
  return model;
}

}  // namespace spool::samples
