#pragma once
// The one place the app's colours come from. Widgets take text, window and base colours from the
// palette; the few colours with a meaning (chat roles, token probabilities, plot series, warnings)
// come from Theme::color, which picks a light or a dark variant from the current palette, so every
// colour follows View > Theme (System, Light, Dark) and a system palette that changes at run time.
// Widgets that bake colours into something (a QTextDocument, QCustomPlot items) restyle themselves
// on ThemeNotifier::themeChanged.
#include <QColor>

#include <cstdint>
#include <QObject>
#include <QString>

class QCPAxis;
class QCustomPlot;
class QLabel;
class QPalette;

enum class ThemeMode { System, Light, Dark };

// Emits themeChanged after View > Theme or the system palette changed the application palette.
class ThemeNotifier : public QObject {
    Q_OBJECT

public:
    static ThemeNotifier* instance();

Q_SIGNALS:
    void themeChanged();

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    explicit ThemeNotifier(QObject* parent);
};

class Theme {
public:
    // Colours with a meaning; each has a light and a dark variant.
    enum class Role {
        UserName,        // "You" above the user's messages
        AssistantName,   // "Assistant" above replies
        CodeBackground,  // fenced code blocks and inline code in replies
        CodeLabel,       // a code block's language and its Copy link
        Link,            // links in replies (Markdown)
        QuoteText,       // block quotes in replies
        TableBorder,     // table grid in replies
        Warning,         // "GPU not used", model warnings, the edit notice
        Error,           // failed actions in dialogs
        BannerBackground,
        BannerBorder,
        RawSeries,       // candidate chart: probabilities before sampling
        FinalSeries,     // after sampling; also the token inspector's attention bars
        TopPMark,
        MinPMark,
        UsedSeries,      // KV cache bytes used
        ReservedSeries,  // KV cache bytes reserved
        ReservedLine,
        MaskedCell,      // attention map: future (masked) keys and rows not captured
        PromptTokenA,    // the Prompt view's token boxes, alternating A and B
        PromptTokenB,
        PromptControl,   // a control / special token's box in the Prompt view
        PromptControlText,
        PromptInput,     // text that came from the user's input (not the template) in the Prompt view
    OutOfWindowCell, // attention map: keys outside a sliding-window layer's window
    };

    // Sets the style and palette: System restores what the platform gave at start-up, Light and Dark
    // use the Fusion style (the one style whose palette is fully honoured on every platform).
    static void apply(ThemeMode mode);
    static ThemeMode mode();
    static QString modeName(ThemeMode mode);      // "system", "light", "dark" (settings, --theme)
    static ThemeMode modeFromName(const QString& name);  // unknown names give System
    static QPalette darkPalette();
    static bool isDark();  // judged from the application palette's window colour

    static QColor color(Role role);
    // Background for a token of probability p: green (likely) through yellow to red (unlikely), light
    // under dark text in a light theme, dark under light text in a dark theme.
    static QColor probabilityColor(float p);
    // A chat token's tooltip: "p = 0.123 · id 42"; a p not known (a remote token without logprobs)
    // and an id the engine does not have (a remote token's, negative) are "—".
    static QString tokenTip(float p, int32_t id);
    // Axes, tick labels, grid, legend and background of a plot from the palette.
    static void stylePlot(QCustomPlot* plot);
    static void styleAxis(QCPAxis* axis);
    // Shows the plot's legend in `font` below the axes, in one row: inside the axis rect it covers
    // points or bars somewhere.
    static void legendBelow(QCustomPlot* plot, const QFont& font);
    // A label's text in a role colour (re-applied on themeChanged by the caller).
    static void setTextColor(QLabel* label, Role role);
};
