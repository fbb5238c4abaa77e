#include "theme.h"

#include <cmath>

#include <QApplication>
#include <QEvent>
#include <QLabel>
#include <QPalette>
#include <QPointer>
#include <QStyle>
#include <QStyleFactory>

#include <qcustomplot.h>

namespace {

struct Pair {
    QColor light;
    QColor dark;
};

Pair rolePair(Theme::Role role) {
    using R = Theme::Role;
    switch (role) {
    case R::UserName: return {QColor(0x1F, 0x5F, 0xAF), QColor(0x7A, 0xB0, 0xFF)};
    case R::AssistantName: return {QColor(0x2E, 0x7D, 0x32), QColor(0x81, 0xC7, 0x84)};
    case R::CodeBackground: return {QColor(0xEE, 0xEE, 0xF2), QColor(0x2E, 0x31, 0x38)};
    case R::CodeLabel: return {QColor(0x5F, 0x63, 0x6E), QColor(0xA8, 0xAD, 0xB8)};
    case R::Link: return {QColor(0x0B, 0x57, 0xD0), QColor(0x8A, 0xB4, 0xF8)};
    case R::QuoteText: return {QColor(0x5A, 0x5E, 0x66), QColor(0xB4, 0xB8, 0xC0)};
    case R::TableBorder: return {QColor(0xC4, 0xC7, 0xCE), QColor(0x4A, 0x4E, 0x57)};
    case R::Warning: return {QColor(0xA0, 0x50, 0x00), QColor(0xFF, 0xB3, 0x5C)};
    case R::Error: return {QColor(0xB0, 0x00, 0x20), QColor(0xFF, 0x6E, 0x80)};
    case R::BannerBackground: return {QColor(0xFF, 0xF4, 0xD6), QColor(0x4A, 0x3C, 0x14)};
    case R::BannerBorder: return {QColor(0xE0, 0xC0, 0x60), QColor(0x8A, 0x6D, 0x1E)};
    case R::RawSeries: return {QColor(120, 144, 200), QColor(110, 140, 215)};
    case R::FinalSeries: return {QColor(230, 120, 40), QColor(245, 145, 60)};
    case R::TopPMark: return {QColor(200, 40, 40), QColor(255, 115, 115)};
    case R::MinPMark: return {QColor(40, 140, 60), QColor(110, 215, 125)};
    case R::UsedSeries: return {QColor(60, 110, 190), QColor(95, 155, 235)};
    case R::ReservedSeries: return {QColor(200, 205, 220), QColor(75, 80, 98)};
    case R::ReservedLine: return {QColor(150, 155, 175), QColor(150, 155, 175)};
    case R::MaskedCell: return {QColor(236, 236, 236), QColor(58, 58, 62)};
    case R::PromptTokenA: return {QColor(0xEE, 0xF1, 0xF6), QColor(0x2E, 0x33, 0x3D)};
    case R::PromptTokenB: return {QColor(0xDD, 0xE3, 0xEC), QColor(0x3D, 0x44, 0x50)};
    case R::PromptControl: return {QColor(0xF6, 0xD5, 0x8E), QColor(0x7A, 0x55, 0x10)};
    case R::PromptControlText: return {QColor(0x5A, 0x36, 0x00), QColor(0xFF, 0xE7, 0xB0)};
    case R::PromptInput: return {QColor(0x0B, 0x5C, 0xAD), QColor(0x8C, 0xC4, 0xFF)};
    case R::OutOfWindowCell: return {QColor(170, 200, 228), QColor(40, 62, 92)};
    }
    return {Qt::gray, Qt::gray};
}

// The style the platform chose before any theme was applied: System goes back to it.
QString platformStyleName() {
    static const QString name = QApplication::style()->name();
    return name;
}

ThemeMode g_mode = ThemeMode::System;

}  // namespace

ThemeNotifier::ThemeNotifier(QObject* parent) : QObject(parent) {
    qApp->installEventFilter(this);
}

ThemeNotifier* ThemeNotifier::instance() {
    static QPointer<ThemeNotifier> notifier;
    if (!notifier) notifier = new ThemeNotifier(qApp);
    return notifier;
}

bool ThemeNotifier::eventFilter(QObject* watched, QEvent* event) {
    // The application object gets one ApplicationPaletteChange per palette change (ours or the
    // system's); widgets get their own copies, which are ignored here.
    if (watched == qApp && event->type() == QEvent::ApplicationPaletteChange) Q_EMIT themeChanged();
    return QObject::eventFilter(watched, event);
}

void Theme::apply(ThemeMode mode) {
    ThemeNotifier::instance();
    const QString platformStyle = platformStyleName();
    g_mode = mode;
    if (mode == ThemeMode::System) {
        if (QApplication::style()->name() != platformStyle) QApplication::setStyle(platformStyle);
        // An empty palette (nothing resolved) is the platform's, and keeps following its changes.
        QApplication::setPalette(QPalette());
    } else {
        if (QApplication::style()->name().compare(QLatin1String("fusion"), Qt::CaseInsensitive) != 0)
            QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
        QApplication::setPalette(mode == ThemeMode::Dark ? darkPalette() : QApplication::style()->standardPalette());
    }
}

ThemeMode Theme::mode() {
    return g_mode;
}

QString Theme::modeName(ThemeMode mode) {
    switch (mode) {
    case ThemeMode::Light: return QStringLiteral("light");
    case ThemeMode::Dark: return QStringLiteral("dark");
    case ThemeMode::System: break;
    }
    return QStringLiteral("system");
}

ThemeMode Theme::modeFromName(const QString& name) {
    if (name == QLatin1String("light")) return ThemeMode::Light;
    if (name == QLatin1String("dark")) return ThemeMode::Dark;
    return ThemeMode::System;
}

QPalette Theme::darkPalette() {
    QPalette p;
    const QColor window(0x2B, 0x2D, 0x31), base(0x1E, 0x1F, 0x22), text(0xE6, 0xE6, 0xE6);
    const QColor disabled(0x80, 0x80, 0x80), highlight(0x3D, 0x7A, 0xD6);
    p.setColor(QPalette::Window, window);
    p.setColor(QPalette::WindowText, text);
    p.setColor(QPalette::Base, base);
    p.setColor(QPalette::AlternateBase, QColor(0x26, 0x28, 0x2C));
    p.setColor(QPalette::ToolTipBase, QColor(0x3A, 0x3D, 0x42));
    p.setColor(QPalette::ToolTipText, text);
    p.setColor(QPalette::PlaceholderText, QColor(0x9A, 0x9A, 0x9A));
    p.setColor(QPalette::Text, text);
    p.setColor(QPalette::Button, QColor(0x35, 0x37, 0x3C));
    p.setColor(QPalette::ButtonText, text);
    p.setColor(QPalette::BrightText, QColor(0xFF, 0x55, 0x55));
    p.setColor(QPalette::Light, QColor(0x45, 0x48, 0x4E));
    p.setColor(QPalette::Midlight, QColor(0x3A, 0x3C, 0x41));
    p.setColor(QPalette::Mid, QColor(0x50, 0x53, 0x59));
    p.setColor(QPalette::Dark, QColor(0x18, 0x19, 0x1B));
    p.setColor(QPalette::Shadow, QColor(0x0A, 0x0A, 0x0A));
    p.setColor(QPalette::Highlight, highlight);
    p.setColor(QPalette::HighlightedText, Qt::white);
    p.setColor(QPalette::Link, QColor(0x7A, 0xB0, 0xFF));
    p.setColor(QPalette::LinkVisited, QColor(0xB0, 0x90, 0xF0));
    for (QPalette::ColorRole r : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText}) p.setColor(QPalette::Disabled, r, disabled);
    p.setColor(QPalette::Disabled, QPalette::Base, window);
    p.setColor(QPalette::Disabled, QPalette::Highlight, QColor(0x50, 0x53, 0x59));
    return p;
}

bool Theme::isDark() {
    return QApplication::palette().color(QPalette::Window).lightnessF() < 0.5;
}

QColor Theme::color(Role role) {
    const Pair pair = rolePair(role);
    return isDark() ? pair.dark : pair.light;
}

QColor Theme::probabilityColor(float p) {
    // Callers give no background to a p not known (a remote engine's token without logprobs); one
    // that comes anyway is the colour of p = 0.
    p = std::isfinite(p) ? std::clamp(p, 0.0f, 1.0f) : 0.0f;
    return isDark() ? QColor::fromHsvF(0.33f * p, 0.65f, 0.42f) : QColor::fromHsvF(0.33f * p, 0.35f, 1.0f);
}

QString Theme::tokenTip(float p, int32_t id) {
    const QString dash = QStringLiteral("\u2014");
    return QObject::tr("p = %1 · id %2")
        .arg(std::isfinite(p) ? QString::number(double(p), 'f', 3) : dash, id >= 0 ? QString::number(id) : dash);
}

void Theme::styleAxis(QCPAxis* axis) {
    const QPalette pal = QApplication::palette();
    const QColor text = pal.color(QPalette::WindowText);
    QColor grid = pal.color(QPalette::Mid);
    const QPen line(text, 0);
    axis->setBasePen(line);
    axis->setTickPen(line);
    axis->setSubTickPen(line);
    axis->setTickLabelColor(text);
    axis->setLabelColor(text);
    axis->grid()->setPen(QPen(grid, 0, Qt::DotLine));
    grid.setAlpha(90);
    axis->grid()->setSubGridPen(QPen(grid, 0, Qt::DotLine));
    axis->grid()->setZeroLinePen(Qt::NoPen);
}

void Theme::legendBelow(QCustomPlot* plot, const QFont& font) {
    plot->legend->setVisible(true);
    plot->legend->setFont(font);
    auto* legendRow = new QCPLayoutGrid;
    plot->plotLayout()->addElement(1, 0, legendRow);
    legendRow->addElement(0, 0, plot->legend);
    plot->legend->setFillOrder(QCPLegend::foColumnsFirst);
    plot->plotLayout()->setRowStretchFactor(1, 0.001);
}

void Theme::stylePlot(QCustomPlot* plot) {
    const QPalette pal = QApplication::palette();
    plot->setBackground(pal.brush(QPalette::Base));
    for (QCPAxisRect* rect : plot->axisRects()) {
        rect->setBackground(pal.brush(QPalette::Base));
        for (QCPAxis* axis : rect->axes()) styleAxis(axis);
    }
    // Colour scales keep their axis in a private axis rect that axisRects() does not list.
    for (QCPLayoutElement* e : plot->plotLayout()->elements(true))
        if (auto* scale = qobject_cast<QCPColorScale*>(e)) styleAxis(scale->axis());
    // A plot whose layout was rebuilt has no legend (QCustomPlot clears the pointer when it goes).
    if (plot->legend) {
        plot->legend->setBrush(pal.brush(QPalette::Base));
        plot->legend->setTextColor(pal.color(QPalette::WindowText));
        plot->legend->setBorderPen(QPen(pal.color(QPalette::Mid), 0));
    }
    plot->replot(QCustomPlot::rpQueuedReplot);
}

void Theme::setTextColor(QLabel* label, Role role) {
    QPalette p = label->palette();
    p.setColor(QPalette::WindowText, color(role));
    label->setPalette(p);
}
