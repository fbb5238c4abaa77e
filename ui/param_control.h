#pragma once
// One sampling knob: a slider for quick changes and a spin box for exact values, kept in step.
// The slider works in integer steps of `step`; the spin box accepts any value in range.
#include <QWidget>

class QDoubleSpinBox;
class QSlider;

class ParamControl : public QWidget {
    Q_OBJECT

public:
    ParamControl(double minimum, double maximum, double step, int decimals, QWidget* parent = nullptr);

    double value() const;
    // Sets without emitting valueChanged (used when a preset or a loaded conversation fills the panel).
    void setValue(double value);
    QSlider* slider() const { return m_slider; }
    QDoubleSpinBox* spinBox() const { return m_spin; }
    // Names the slider and the spin box for screen readers ("Temperature", "Temperature slider").
    void setAccessibleNames(const QString& label);

Q_SIGNALS:
    void valueChanged(double value);

private:
    int toSlider(double v) const;

    QSlider* m_slider;
    QDoubleSpinBox* m_spin;
    double m_minimum;
    double m_step;
};
