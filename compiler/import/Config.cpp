//===- compiler/import/Config.cpp - config.json fields --------------------===//
#include "compiler/import/Config.h"

#include "llvm/ADT/StringExtras.h"

#include <charconv>
#include <cmath>

namespace attnc::import {

std::string formatReal(double value) {
  // 500000 rather than the shorter 5e+05.
  if (value == std::floor(value) && std::fabs(value) < 1e15)
    return std::to_string(static_cast<int64_t>(value));
  char buffer[32];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, ec == std::errc() ? end : buffer);
}

const nlohmann::json *Config::find(llvm::StringRef field) const {
  const nlohmann::json *node = &json;
  llvm::SmallVector<llvm::StringRef> parts;
  field.split(parts, '.');
  for (llvm::StringRef part : parts) {
    if (!node->is_object())
      return nullptr;
    auto it = node->find(part.str());
    if (it == node->end())
      return nullptr;
    node = &*it;
  }
  return node;
}

bool Config::has(llvm::StringRef field) const {
  const nlohmann::json *value = find(field);
  return value && !value->is_null();
}

void Config::fail(llvm::StringRef field, const llvm::Twine &message) {
  error(fileName + ": " + field + " " + message);
}

void Config::divides(llvm::StringRef field, int64_t value,
                     llvm::StringRef ofField, int64_t of) {
  if (value && of && of % value)
    fail(field, std::to_string(value) + " does not divide " + ofField + " " +
                    std::to_string(of));
}

void Config::record(llvm::StringRef field, llvm::StringRef value,
                    bool isDefault) {
  for (auto &[name, _] : read)
    if (name == field)
      return;
  read.emplace_back(field.str(),
                    (value + (isDefault ? " (default)" : "")).str());
}

std::vector<std::string> Config::fieldsRead() const {
  std::vector<std::string> fields;
  for (auto &[name, value] : read)
    fields.push_back(name + " " + value);
  return fields;
}

/// The value's JSON text, for messages: `"gelu"`, `1.5`, `null`.
static std::string show(const nlohmann::json &value) { return value.dump(); }

int64_t Config::count(llvm::StringRef field) {
  const nlohmann::json *value = find(field);
  if (!value || value->is_null()) {
    fail(field, "is missing");
    return 0;
  }
  if (!value->is_number_integer() || value->get<int64_t>() <= 0) {
    fail(field, "is " + show(*value) + ", expected a positive integer");
    return 0;
  }
  record(field, std::to_string(value->get<int64_t>()), false);
  return value->get<int64_t>();
}

int64_t Config::integer(llvm::StringRef field, int64_t otherwise) {
  const nlohmann::json *value = find(field);
  if (!value || value->is_null()) {
    record(field, std::to_string(otherwise), true);
    return otherwise;
  }
  if (!value->is_number_integer() || value->get<int64_t>() < 0) {
    fail(field, "is " + show(*value) + ", expected an integer >= 0");
    return otherwise;
  }
  record(field, std::to_string(value->get<int64_t>()), false);
  return value->get<int64_t>();
}

double Config::positive(llvm::StringRef field, double otherwise) {
  const nlohmann::json *value = find(field);
  if (!value || value->is_null()) {
    record(field, formatReal(otherwise), true);
    return otherwise;
  }
  if (!value->is_number() || !std::isfinite(value->get<double>()) ||
      value->get<double>() <= 0) {
    fail(field, "is " + show(*value) + ", expected a positive number");
    return otherwise;
  }
  record(field, formatReal(value->get<double>()), false);
  return value->get<double>();
}

std::string Config::string(llvm::StringRef field, llvm::StringRef otherwise) {
  const nlohmann::json *value = find(field);
  if (!value || value->is_null()) {
    record(field, "\"" + otherwise.str() + "\"", true);
    return otherwise.str();
  }
  if (!value->is_string()) {
    fail(field, "is " + show(*value) + ", expected a string");
    return otherwise.str();
  }
  record(field, show(*value), false);
  return value->get<std::string>();
}

bool Config::boolean(llvm::StringRef field, bool otherwise) {
  const nlohmann::json *value = find(field);
  if (!value || value->is_null()) {
    record(field, otherwise ? "true" : "false", true);
    return otherwise;
  }
  if (!value->is_boolean()) {
    fail(field, "is " + show(*value) + ", expected true or false");
    return otherwise;
  }
  record(field, value->get<bool>() ? "true" : "false", false);
  return value->get<bool>();
}

} // namespace attnc::import
