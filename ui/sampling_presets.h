#pragma once
// Sampling presets: five built in (Precise, Balanced, Creative, Varied (DRY + XTC), and JSON output with
// a JSON-object grammar) and the user's own, saved in QSettings
// as JSON so they survive restarts and new knobs get their defaults when an old preset is read.
#include <QString>
#include <QStringList>

#include "sampling/sampling_params.h"

class SamplingPresets {
public:
    static QStringList builtinNames();
    static bool isBuiltin(const QString& name);
    // All names: built-in first, then the user's in alphabetical order.
    static QStringList names();
    // false when there is no such preset.
    static bool find(const QString& name, wb::SamplingParams* params);
    static void saveUser(const QString& name, const wb::SamplingParams& params);
    static void removeUser(const QString& name);
};
