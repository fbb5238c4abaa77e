#include "param_control.h"

#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QSignalBlocker>
#include <QSlider>
#include <cmath>

ParamControl::ParamControl(double minimum, double maximum, double step, int decimals, QWidget* parent)
    : QWidget(parent), m_minimum(minimum), m_step(step) {
    m_slider = new QSlider(Qt::Horizontal, this);
    m_slider->setRange(0, toSlider(maximum));
    m_spin = new QDoubleSpinBox(this);
    m_spin->setRange(minimum, maximum);
    m_spin->setDecimals(decimals);
    m_spin->setSingleStep(step);
    // The spin box sizes itself to its range; the slider may shrink to a few characters when the
    // dock is narrow (font units, so it scales with the font as well as the screen).
    m_slider->setMinimumWidth(fontMetrics().averageCharWidth() * 6);
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_slider, 1);
    layout->addWidget(m_spin);
    connect(m_slider, &QSlider::valueChanged, this, [this](int s) {
        const double v = m_minimum + s * m_step;
        {
            QSignalBlocker block(m_spin);
            m_spin->setValue(v);
        }
        Q_EMIT valueChanged(m_spin->value());
    });
    connect(m_spin, &QDoubleSpinBox::valueChanged, this, [this](double v) {
        {
            QSignalBlocker block(m_slider);
            m_slider->setValue(toSlider(v));
        }
        Q_EMIT valueChanged(v);
    });
}

void ParamControl::setAccessibleNames(const QString& label) {
    m_spin->setAccessibleName(label);
    m_slider->setAccessibleName(tr("%1 slider").arg(label));
}

int ParamControl::toSlider(double v) const {
    return int(std::lround((v - m_minimum) / m_step));
}

double ParamControl::value() const {
    return m_spin->value();
}

void ParamControl::setValue(double value) {
    QSignalBlocker b1(m_spin);
    QSignalBlocker b2(m_slider);
    m_spin->setValue(value);
    m_slider->setValue(toSlider(m_spin->value()));
}
