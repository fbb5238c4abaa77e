#include "chat/jinja/template.h"

#include "chat/jinja/parser.h"
#include "chat/jinja/renderer.h"
#include "chat/jinja/taint.h"

namespace wb::jinja {

Template::Template() = default;
Template::Template(const Template&) = default;
Template& Template::operator=(const Template&) = default;
Template::Template(Template&&) noexcept = default;
Template& Template::operator=(Template&&) noexcept = default;
Template::~Template() = default;

Template Template::parse(std::string_view source) {
    Template t;
    try {
        t.body_ = std::make_shared<const std::vector<StmtPtr>>(jinja::parse(source));
    } catch (const wb::Error&) {
        throw;
    } catch (const std::exception& e) {
        throw wb::Error(std::string("cannot parse the template: ") + e.what());
    }
    return t;
}

std::string Template::render(const Value& context, const RenderOptions& options) const {
    return render_text(context, options).text();
}

std::vector<Segment> Template::render_segments(const Value& context, const RenderOptions& options) const {
    return render_text(context, options).segments();
}

TaintedText Template::render_text(const Value& context, const RenderOptions& options) const {
    if (!context.is_dict()) throw wb::Error("template context must be a dict of variables");
    Renderer r(options);
    try {
        return r.render(*body_, context);
    } catch (const wb::Error&) {
        throw;
    } catch (const std::exception& e) {
        throw wb::Error(std::string("cannot render the template: ") + e.what());
    }
}

}  // namespace wb::jinja
